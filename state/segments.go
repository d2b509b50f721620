package state

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/lakegw/lakegw/offsets"
)

// Store persists the offset index (offsets.Store).
var _ offsets.Store = (*Store)(nil)

// LoadTopic returns the persisted state and segments of a topic; found is
// false when the topic has never been indexed.
func (s *Store) LoadTopic(ctx context.Context, topic string) (st offsets.TopicState, segs []offsets.Segment, found bool, err error) {
	var epochs string
	err = s.db.QueryRowContext(ctx, s.d.q(`SELECT table_uuid, partitions, epochs, encoding FROM topic_state WHERE topic=?`), topic).
		Scan(&st.TableUUID, &st.Partitions, &epochs, &st.Encoding)
	if errors.Is(err, sql.ErrNoRows) {
		return offsets.TopicState{}, nil, false, nil
	}
	if err != nil {
		return offsets.TopicState{}, nil, false, fmt.Errorf("load topic state %s: %w", topic, err)
	}
	st.Topic = topic
	if err := json.Unmarshal([]byte(epochs), &st.Epochs); err != nil {
		return offsets.TopicState{}, nil, false, fmt.Errorf("topic %s: bad epochs %q: %w", topic, epochs, err)
	}
	rows, err := s.db.QueryContext(ctx,
		s.d.q(`SELECT kind, partition, snapshot_id, sequence_number, timestamp_ms, base_offset, record_count, leader_epoch
		 FROM segments WHERE topic=? ORDER BY partition, base_offset, kind DESC, `+s.d.insertOrder), topic)
	if err != nil {
		return offsets.TopicState{}, nil, false, fmt.Errorf("load segments of %s: %w", topic, err)
	}
	defer rows.Close()
	for rows.Next() {
		var g offsets.Segment
		if err := rows.Scan(&g.Kind, &g.Partition, &g.SnapshotID, &g.SequenceNumber, &g.TimestampMs, &g.BaseOffset, &g.Count, &g.Epoch); err != nil {
			return offsets.TopicState{}, nil, false, fmt.Errorf("read segment of %s: %w", topic, err)
		}
		segs = append(segs, g)
	}
	if err := rows.Err(); err != nil {
		return offsets.TopicState{}, nil, false, fmt.Errorf("read segments of %s: %w", topic, err)
	}
	return st, segs, true, nil
}

// AppendSegments persists the topic state and new segments in one
// transaction, so a crash never leaves an index that disagrees with itself.
func (s *Store) AppendSegments(ctx context.Context, st offsets.TopicState, segs []offsets.Segment) error {
	return s.writeTopic(ctx, st, segs, false)
}

// ReplaceTopic rewrites a topic's state and all its segments (after a history
// rewrite truncated the index).
func (s *Store) ReplaceTopic(ctx context.Context, st offsets.TopicState, segs []offsets.Segment) error {
	return s.writeTopic(ctx, st, segs, true)
}

// ReplacePrefix drops the replaced segments and stores the compacted
// prefixes that stand in for them, with the topic state, in one
// transaction. Each replaced segment is deleted by its primary key, so the
// cost is that of the expired history, not of the segments kept. A
// prefix loads before the empty segments that may share its base offset
// (LoadTopic orders by kind at one offset): it is always first in its
// partition.
func (s *Store) ReplacePrefix(ctx context.Context, st offsets.TopicState, replaced, prefix []offsets.Segment) error {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if err := s.putTopicState(ctx, tx, st); err != nil {
			return err
		}
		del, err := tx.PrepareContext(ctx, s.d.q(`DELETE FROM segments WHERE topic=? AND partition=? AND base_offset=? AND snapshot_id=?`))
		if err != nil {
			return err
		}
		defer del.Close()
		for _, g := range replaced {
			if _, err := del.ExecContext(ctx, st.Topic, g.Partition, g.BaseOffset, g.SnapshotID); err != nil {
				return err
			}
		}
		return s.insertSegments(ctx, tx, st.Topic, prefix)
	})
	if err != nil {
		return fmt.Errorf("persist the compacted prefix of %s: %w", st.Topic, err)
	}
	return nil
}

func (s *Store) writeTopic(ctx context.Context, st offsets.TopicState, segs []offsets.Segment, replace bool) error {
	err := s.inTx(ctx, func(tx *sql.Tx) error {
		if err := s.putTopicState(ctx, tx, st); err != nil {
			return err
		}
		if replace {
			if _, err := tx.ExecContext(ctx, s.d.q(`DELETE FROM segments WHERE topic=?`), st.Topic); err != nil {
				return err
			}
		}
		return s.insertSegments(ctx, tx, st.Topic, segs)
	})
	if err != nil {
		return fmt.Errorf("persist offset index of %s: %w", st.Topic, err)
	}
	return nil
}

func (s *Store) putTopicState(ctx context.Context, tx *sql.Tx, st offsets.TopicState) error {
	epochs, err := json.Marshal(st.Epochs)
	if err != nil {
		return fmt.Errorf("encode epochs: %w", err)
	}
	_, err = tx.ExecContext(ctx,
		s.d.q(`INSERT INTO topic_state(topic, table_uuid, partitions, epochs, encoding) VALUES(?,?,?,?,?)
		 ON CONFLICT(topic) DO UPDATE SET table_uuid=excluded.table_uuid, partitions=excluded.partitions, epochs=excluded.epochs,
		 encoding=excluded.encoding`),
		st.Topic, st.TableUUID, st.Partitions, string(epochs), st.Encoding)
	return err
}

// insertSegments adds segs. A segment stored already (same partition,
// offset and snapshot) is left as it is when it agrees with g: gateways
// sharing the store index the same tables, and offsets are a property of
// the lake, so each may store a segment another stored first. One that
// disagrees is an error, never overwritten: two gateways would be serving
// different offsets.
func (s *Store) insertSegments(ctx context.Context, tx *sql.Tx, topic string, segs []offsets.Segment) error {
	if len(segs) == 0 {
		return nil
	}
	stmt, err := tx.PrepareContext(ctx,
		s.d.q(`INSERT INTO segments(topic, partition, base_offset, snapshot_id, sequence_number, timestamp_ms, record_count, kind, leader_epoch)
		 VALUES(?,?,?,?,?,?,?,?,?) ON CONFLICT (topic, partition, base_offset, snapshot_id) DO NOTHING`))
	if err != nil {
		return err
	}
	defer stmt.Close()
	for _, g := range segs {
		res, err := stmt.ExecContext(ctx, topic, g.Partition, g.BaseOffset, g.SnapshotID, g.SequenceNumber, g.TimestampMs, g.Count, g.Kind, g.Epoch)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			if err := s.checkStoredSegment(ctx, tx, topic, g); err != nil {
				return err
			}
		}
	}
	return nil
}

// ErrIndexDisagrees: the store holds another segment where this gateway
// indexed one.
var ErrIndexDisagrees = errors.New("the stored offset index disagrees with this gateway's")

func (s *Store) checkStoredSegment(ctx context.Context, tx *sql.Tx, topic string, g offsets.Segment) error {
	stored := offsets.Segment{Partition: g.Partition, BaseOffset: g.BaseOffset, SnapshotID: g.SnapshotID}
	err := tx.QueryRowContext(ctx, s.d.q(`SELECT sequence_number, timestamp_ms, record_count, kind, leader_epoch FROM segments
		WHERE topic=? AND partition=? AND base_offset=? AND snapshot_id=?`), topic, g.Partition, g.BaseOffset, g.SnapshotID).
		Scan(&stored.SequenceNumber, &stored.TimestampMs, &stored.Count, &stored.Kind, &stored.Epoch)
	if err != nil {
		return fmt.Errorf("read the stored segment of %s/%d at offset %d: %w", topic, g.Partition, g.BaseOffset, err)
	}
	if stored != g {
		return fmt.Errorf("%w: %s/%d at offset %d, snapshot %d: stored %+v, indexed %+v", ErrIndexDisagrees, topic, g.Partition, g.BaseOffset, g.SnapshotID, stored, g)
	}
	return nil
}
