package groups

import "context"

// CommittedOffset is one committed position of a group on a partition, as
// it is persisted. It is the unit the OffsetStore reads and writes.
type CommittedOffset struct {
	Group       string
	Topic       string
	Partition   int32
	Offset      int64
	LeaderEpoch int32 // -1 when the client did not send one
	Metadata    string
	// CommitTimeMs is when the coordinator accepted the commit, in Unix
	// milliseconds: offset retention counts from the group's latest one.
	CommitTimeMs int64
}

// OffsetStore persists committed offsets. The state store implements it;
// the coordinator only needs these three calls.
//
// SaveOffsets must be durable when it returns nil: the coordinator
// acknowledges a commit to the client only after that. A later save of the
// same (Group, Topic, Partition) replaces the earlier one. The coordinator
// never calls SaveOffsets concurrently for the same group, so a store may
// apply saves in call order without extra locking per group.
//
// DeleteGroupOffsets removes every committed offset of one group (their
// retention expired, or DeleteGroups); DeletePartitionOffsets those of some
// of its partitions (OffsetDelete). Like SaveOffsets they are never
// concurrent with another call for the same group.
type OffsetStore interface {
	LoadOffsets(ctx context.Context) ([]CommittedOffset, error)
	SaveOffsets(ctx context.Context, offs []CommittedOffset) error
	DeleteGroupOffsets(ctx context.Context, group string) error
	DeletePartitionOffsets(ctx context.Context, group string, parts []TopicPartition) error
}

// TopicPartition names one partition of a group's committed offsets.
type TopicPartition struct {
	Topic     string
	Partition int32
}
