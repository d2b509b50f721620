package state

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/lakegw/lakegw/protocol/groups"
)

// Store persists the group coordinator's committed offsets
// (groups.OffsetStore).
var _ groups.OffsetStore = (*Store)(nil)

// LoadOffsets returns every committed offset.
func (s *Store) LoadOffsets(ctx context.Context) ([]groups.CommittedOffset, error) {
	return s.queryOffsets(ctx, "", `SELECT group_id, topic, partition, "offset", leader_epoch, metadata, commit_ms FROM group_offsets`)
}

// TopicOffsets returns every group's committed offsets on topic: what
// gateways sharing the store pin history with, whichever coordinates the
// group.
func (s *Store) TopicOffsets(ctx context.Context, topic string) ([]groups.CommittedOffset, error) {
	return s.queryOffsets(ctx, " on "+topic,
		`SELECT group_id, topic, partition, "offset", leader_epoch, metadata, commit_ms FROM group_offsets WHERE topic = ?`, topic)
}

func (s *Store) queryOffsets(ctx context.Context, which, query string, args ...any) ([]groups.CommittedOffset, error) {
	rows, err := s.db.QueryContext(ctx, s.d.q(query), args...)
	if err != nil {
		return nil, fmt.Errorf("load group offsets%s: %w", which, err)
	}
	defer rows.Close()
	var out []groups.CommittedOffset
	for rows.Next() {
		var o groups.CommittedOffset
		if err := rows.Scan(&o.Group, &o.Topic, &o.Partition, &o.Offset, &o.LeaderEpoch, &o.Metadata, &o.CommitTimeMs); err != nil {
			return nil, fmt.Errorf("read group offset: %w", err)
		}
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load group offsets%s: %w", which, err)
	}
	return out, nil
}

// SaveOffsets upserts committed offsets; when it returns nil they
// are durable (the store syncs every commit). Concurrent calls share one
// transaction and so one sync (group commit, offset_saves.go): each is
// answered once the transaction holding it committed.
func (s *Store) SaveOffsets(ctx context.Context, offs []groups.CommittedOffset) error {
	if err := s.saves.save(ctx, offs, s.writeGroupOffsets); err != nil {
		return fmt.Errorf("save group offsets: %w", err)
	}
	return nil
}

// writeGroupOffsets upserts offs in one transaction, in order.
func (s *Store) writeGroupOffsets(ctx context.Context, offs []groups.CommittedOffset) error {
	ids := make([]string, len(offs))
	for i, o := range offs {
		ids[i] = o.Group
	}
	return s.fenced(ctx, ids, func(tx *sql.Tx) error {
		stmt, err := tx.PrepareContext(ctx,
			s.d.q(`INSERT INTO group_offsets(group_id, topic, partition, "offset", leader_epoch, metadata, commit_ms) VALUES(?,?,?,?,?,?,?)
			 ON CONFLICT(group_id, topic, partition) DO UPDATE SET "offset"=excluded."offset",
			   leader_epoch=excluded.leader_epoch, metadata=excluded.metadata, commit_ms=excluded.commit_ms`))
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, o := range offs {
			if _, err := stmt.ExecContext(ctx, s.d.client(o.Group), o.Topic, o.Partition, o.Offset, o.LeaderEpoch, s.d.client(o.Metadata), o.CommitTimeMs); err != nil {
				return err
			}
		}
		return nil
	})
}

// DeleteGroupOffsets removes every committed offset of group (their
// retention expired).
func (s *Store) DeleteGroupOffsets(ctx context.Context, group string) error {
	return s.fenced(ctx, []string{group}, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, s.d.q(`DELETE FROM group_offsets WHERE group_id = ?`), s.d.client(group)); err != nil {
			return fmt.Errorf("delete offsets of group %q: %w", group, err)
		}
		return nil
	})
}

// DeletePartitionOffsets removes the committed offsets of some of group's
// partitions (OffsetDelete), in one transaction.
func (s *Store) DeletePartitionOffsets(ctx context.Context, group string, parts []groups.TopicPartition) error {
	return s.fenced(ctx, []string{group}, func(tx *sql.Tx) error {
		for _, p := range parts {
			if _, err := tx.ExecContext(ctx, s.d.q(`DELETE FROM group_offsets WHERE group_id = ? AND topic = ? AND partition = ?`),
				s.d.client(group), p.Topic, p.Partition); err != nil {
				return fmt.Errorf("delete offset of group %q on %s/%d: %w", group, p.Topic, p.Partition, err)
			}
		}
		return nil
	})
}
