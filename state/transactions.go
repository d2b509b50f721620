package state

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"

	"github.com/lakegw/lakegw/txn"
)

// Store keeps the transaction coordinator's state (txn.Store).
var _ txn.Store = (*Store)(nil)

// LoadTransactions returns every transactional id's record.
func (s *Store) LoadTransactions(ctx context.Context) ([]txn.Record, error) {
	rows, err := s.db.QueryContext(ctx, s.d.q(`SELECT txn_id, record FROM transactions`))
	if err != nil {
		return nil, fmt.Errorf("load transactions: %w", err)
	}
	defer rows.Close()
	var out []txn.Record
	for rows.Next() {
		var id, v string
		if err := rows.Scan(&id, &v); err != nil {
			return nil, fmt.Errorf("read transaction: %w", err)
		}
		var r txn.Record
		if err := json.Unmarshal([]byte(v), &r); err != nil {
			return nil, fmt.Errorf("transactional id %q: damaged record: %w", id, err)
		}
		// The key is exact; JSON replaced any invalid UTF-8 in the copy.
		r.ID = id
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("load transactions: %w", err)
	}
	return out, nil
}

// SaveTransaction writes rec, replacing the id's record.
func (s *Store) SaveTransaction(ctx context.Context, rec txn.Record) error {
	return s.inTx(ctx, func(tx *sql.Tx) error { return s.putTransaction(ctx, tx, rec) })
}

// StageBatches adds bs to rec.ID's staged batches and writes rec, in one
// transaction (one sync for a produce request's batches).
func (s *Store) StageBatches(ctx context.Context, rec txn.Record, bs []txn.StagedBatch) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		for _, b := range bs {
			if _, err := tx.ExecContext(ctx, s.d.q(`INSERT INTO txn_batches(txn_id, n, topic, partition, first_seq, last_seq, batch) VALUES(?,?,?,?,?,?,?)`),
				s.d.client(rec.ID), b.N, b.Topic, b.Partition, b.FirstSeq, b.LastSeq, b.Batch); err != nil {
				return fmt.Errorf("stage a batch of %q: %w", rec.ID, err)
			}
		}
		return s.putTransaction(ctx, tx, rec)
	})
}

// StagedBatches returns id's staged batches of topic in staging order.
func (s *Store) StagedBatches(ctx context.Context, id, topic string) ([]txn.StagedBatch, error) {
	rows, err := s.db.QueryContext(ctx, s.d.q(`SELECT n, partition, first_seq, last_seq, batch FROM txn_batches WHERE txn_id = ? AND topic = ? ORDER BY n`), s.d.client(id), topic)
	if err != nil {
		return nil, fmt.Errorf("staged batches of %q: %w", id, err)
	}
	defer rows.Close()
	var out []txn.StagedBatch
	for rows.Next() {
		b := txn.StagedBatch{Topic: topic}
		if err := rows.Scan(&b.N, &b.Partition, &b.FirstSeq, &b.LastSeq, &b.Batch); err != nil {
			return nil, fmt.Errorf("staged batch of %q: %w", id, err)
		}
		out = append(out, b)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("staged batches of %q: %w", id, err)
	}
	return out, nil
}

// StageOffsets adds or replaces staged offsets of rec.ID and writes rec,
// at once.
func (s *Store) StageOffsets(ctx context.Context, rec txn.Record, offs []txn.StagedOffset) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		for _, o := range offs {
			if _, err := tx.ExecContext(ctx, s.d.q(`INSERT INTO txn_offsets(txn_id, group_id, topic, partition, "offset", leader_epoch, metadata) VALUES(?,?,?,?,?,?,?)
				ON CONFLICT(txn_id, group_id, topic, partition) DO UPDATE SET "offset"=excluded."offset", leader_epoch=excluded.leader_epoch, metadata=excluded.metadata`),
				s.d.client(rec.ID), s.d.client(o.Group), o.Topic, o.Partition, o.Offset, o.LeaderEpoch, s.d.client(o.Metadata)); err != nil {
				return fmt.Errorf("stage offsets of %q: %w", rec.ID, err)
			}
		}
		return s.putTransaction(ctx, tx, rec)
	})
}

// StagedOffsets returns id's staged offsets.
func (s *Store) StagedOffsets(ctx context.Context, id string) ([]txn.StagedOffset, error) {
	rows, err := s.db.QueryContext(ctx, s.d.q(`SELECT group_id, topic, partition, "offset", leader_epoch, metadata FROM txn_offsets WHERE txn_id = ?`), s.d.client(id))
	if err != nil {
		return nil, fmt.Errorf("staged offsets of %q: %w", id, err)
	}
	defer rows.Close()
	var out []txn.StagedOffset
	for rows.Next() {
		var o txn.StagedOffset
		if err := rows.Scan(&o.Group, &o.Topic, &o.Partition, &o.Offset, &o.LeaderEpoch, &o.Metadata); err != nil {
			return nil, fmt.Errorf("staged offset of %q: %w", id, err)
		}
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("staged offsets of %q: %w", id, err)
	}
	return out, nil
}

// ClearStaged removes rec.ID's staged batches and offsets and writes rec,
// at once.
func (s *Store) ClearStaged(ctx context.Context, rec txn.Record) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		if err := s.clearStaged(ctx, tx, rec.ID); err != nil {
			return err
		}
		return s.putTransaction(ctx, tx, rec)
	})
}

// DeleteTransaction removes the id, its record and anything it staged.
func (s *Store) DeleteTransaction(ctx context.Context, id string) error {
	return s.inTx(ctx, func(tx *sql.Tx) error {
		if err := s.clearStaged(ctx, tx, id); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, s.d.q(`DELETE FROM transactions WHERE txn_id = ?`), s.d.client(id)); err != nil {
			return fmt.Errorf("delete transactional id %q: %w", id, err)
		}
		return nil
	})
}

func (s *Store) clearStaged(ctx context.Context, tx *sql.Tx, id string) error {
	if _, err := tx.ExecContext(ctx, s.d.q(`DELETE FROM txn_batches WHERE txn_id = ?`), s.d.client(id)); err != nil {
		return fmt.Errorf("clear the staged batches of %q: %w", id, err)
	}
	if _, err := tx.ExecContext(ctx, s.d.q(`DELETE FROM txn_offsets WHERE txn_id = ?`), s.d.client(id)); err != nil {
		return fmt.Errorf("clear the staged offsets of %q: %w", id, err)
	}
	return nil
}

func (s *Store) putTransaction(ctx context.Context, tx *sql.Tx, rec txn.Record) error {
	v, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("encode transaction %q: %w", rec.ID, err)
	}
	if _, err := tx.ExecContext(ctx, s.d.q(`INSERT INTO transactions(txn_id, record) VALUES(?,?) ON CONFLICT(txn_id) DO UPDATE SET record=excluded.record`),
		s.d.client(rec.ID), string(v)); err != nil {
		return fmt.Errorf("save transaction %q: %w", rec.ID, err)
	}
	return nil
}
