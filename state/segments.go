package state

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
)

// SegmentKind says what a segment's records are.
type SegmentKind int8

const (
	// KindChanges: the change events of the snapshot.
	KindChanges SegmentKind = 0
	// KindCompactedPrefix: the live rows of the snapshot, standing in for
	// the history up to it after older snapshots were expired.
	KindCompactedPrefix SegmentKind = 1
)

// Segment is the run of offsets one snapshot occupies in one partition.
type Segment struct {
	Kind           SegmentKind
	Partition      int32
	SnapshotID     int64
	SequenceNumber int64
	TimestampMs    int64
	BaseOffset     int64
	Count          int64
	// Epoch is the leader epoch of the segment's records, the one their
	// batches carry: its snapshot's own (a compacted prefix: the epoch
	// that rewrote them), rising with the offset (offsets/epochs.go). -1
	// for segments stored before it was recorded.
	Epoch int32
}

// EpochStart is the first offset of a leader epoch in one partition.
type EpochStart struct {
	Epoch       int32 `json:"epoch"`
	StartOffset int64 `json:"start_offset"`
}

// TopicState is what the offset index persists per topic besides segments.
type TopicState struct {
	Topic      string
	TableUUID  string
	Partitions int32
	// Epochs holds, per partition, the leader epochs in order.
	Epochs [][]EpochStart
	// Encoding names how the topic's records are encoded (format, key
	// columns, schema...): when it changes, the records at every offset
	// change. Empty when not recorded (a store written before it was).
	Encoding string
}

// LoadTopic returns the persisted state and segments of a topic; found is
// false when the topic has never been indexed.
func (s *Store) LoadTopic(ctx context.Context, topic string) (st TopicState, segs []Segment, found bool, err error) {
	var epochs string
	err = s.db.QueryRowContext(ctx, `SELECT table_uuid, partitions, epochs, encoding FROM topic_state WHERE topic=?`, topic).
		Scan(&st.TableUUID, &st.Partitions, &epochs, &st.Encoding)
	if errors.Is(err, sql.ErrNoRows) {
		return TopicState{}, nil, false, nil
	}
	if err != nil {
		return TopicState{}, nil, false, fmt.Errorf("load topic state %s: %w", topic, err)
	}
	st.Topic = topic
	if err := json.Unmarshal([]byte(epochs), &st.Epochs); err != nil {
		return TopicState{}, nil, false, fmt.Errorf("topic %s: bad epochs %q: %w", topic, epochs, err)
	}
	rows, err := s.db.QueryContext(ctx,
		`SELECT kind, partition, snapshot_id, sequence_number, timestamp_ms, base_offset, record_count, leader_epoch
		 FROM segments WHERE topic=? ORDER BY partition, base_offset, rowid`, topic)
	if err != nil {
		return TopicState{}, nil, false, fmt.Errorf("load segments of %s: %w", topic, err)
	}
	defer rows.Close()
	for rows.Next() {
		var g Segment
		if err := rows.Scan(&g.Kind, &g.Partition, &g.SnapshotID, &g.SequenceNumber, &g.TimestampMs, &g.BaseOffset, &g.Count, &g.Epoch); err != nil {
			return TopicState{}, nil, false, fmt.Errorf("read segment of %s: %w", topic, err)
		}
		segs = append(segs, g)
	}
	if err := rows.Err(); err != nil {
		return TopicState{}, nil, false, fmt.Errorf("read segments of %s: %w", topic, err)
	}
	return st, segs, true, nil
}

// AppendSegments persists the topic state and new segments in one
// transaction, so a crash never leaves an index that disagrees with itself.
func (s *Store) AppendSegments(ctx context.Context, st TopicState, segs []Segment) error {
	return s.writeTopic(ctx, st, segs, false)
}

// ReplaceTopic rewrites a topic's state and all its segments (after a history
// rewrite truncated the index).
func (s *Store) ReplaceTopic(ctx context.Context, st TopicState, segs []Segment) error {
	return s.writeTopic(ctx, st, segs, true)
}

func (s *Store) writeTopic(ctx context.Context, st TopicState, segs []Segment, replace bool) error {
	epochs, err := json.Marshal(st.Epochs)
	if err != nil {
		return fmt.Errorf("encode epochs: %w", err)
	}
	err = s.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx,
			`INSERT INTO topic_state(topic, table_uuid, partitions, epochs, encoding) VALUES(?,?,?,?,?)
			 ON CONFLICT(topic) DO UPDATE SET table_uuid=excluded.table_uuid, partitions=excluded.partitions, epochs=excluded.epochs,
			 encoding=excluded.encoding`,
			st.Topic, st.TableUUID, st.Partitions, string(epochs), st.Encoding); err != nil {
			return err
		}
		if replace {
			if _, err := tx.ExecContext(ctx, `DELETE FROM segments WHERE topic=?`, st.Topic); err != nil {
				return err
			}
		}
		stmt, err := tx.PrepareContext(ctx,
			`INSERT INTO segments(topic, partition, base_offset, snapshot_id, sequence_number, timestamp_ms, record_count, kind, leader_epoch)
			 VALUES(?,?,?,?,?,?,?,?,?)`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for _, g := range segs {
			if _, err := stmt.ExecContext(ctx, st.Topic, g.Partition, g.BaseOffset, g.SnapshotID, g.SequenceNumber, g.TimestampMs, g.Count, g.Kind, g.Epoch); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("persist offset index of %s: %w", st.Topic, err)
	}
	return nil
}
