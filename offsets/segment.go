package offsets

import "context"

// SegmentKind says what a segment's records are.
type SegmentKind int8

const (
	// KindChanges: the change events of the snapshot.
	KindChanges SegmentKind = 0
	// KindCompactedPrefix: the live rows of the snapshot, standing in for
	// the history up to it after older snapshots were expired.
	KindCompactedPrefix SegmentKind = 1
)

// Segment is the run of offsets one snapshot occupies in one partition:
// the offset index's unit, which its Store persists.
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

// Store persists the offset index of every topic: the state store
// (package state) implements it, so that a restart, or another gateway of
// the same table, serves identical offsets.
type Store interface {
	// LoadTopic returns the persisted state and segments of a topic;
	// found is false when the topic has never been indexed.
	LoadTopic(ctx context.Context, topic string) (st TopicState, segs []Segment, found bool, err error)
	// AppendSegments adds segs after the topic's segments and stores st.
	AppendSegments(ctx context.Context, st TopicState, segs []Segment) error
	// ReplaceTopic replaces the topic's state and all its segments.
	ReplaceTopic(ctx context.Context, st TopicState, segs []Segment) error
	// ReplacePrefix drops replaced, the first segments of their
	// partitions, puts prefix (one compacted-prefix segment per
	// partition) first in each partition, and stores st. Its cost is
	// that of what it drops, not of the segments kept: expiry runs at
	// every maintenance pass, and a topic retains days of snapshots.
	ReplacePrefix(ctx context.Context, st TopicState, replaced, prefix []Segment) error
}
