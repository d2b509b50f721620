package main

import (
	"flag"
	"time"

	"github.com/lakegw/lakegw/protocol/groups"
)

// groupLimitFlags are serve's bounds on what clients may make the group
// coordinator keep (issue #12): members, groups, pending member ids and
// offset metadata. Kafka leaves most of them unlimited; a gateway any
// client can reach cannot.
type groupLimitFlags struct {
	maxSize          *int
	maxCount         *int
	maxOffsets       *int
	maxPending       *int
	maxMetadataBytes *int

	consumerHeartbeat *time.Duration
	consumerSession   *time.Duration
}

func addGroupLimitFlags(fs *flag.FlagSet) *groupLimitFlags {
	return &groupLimitFlags{
		maxSize: fs.Int("group-max-size", groups.DefaultMaxGroupSize,
			"most members of one consumer group, pending member ids included (Kafka's group.max.size); more get GROUP_MAX_SIZE_REACHED (0 or less: unlimited)"),
		maxCount: fs.Int("group-max-count", groups.DefaultMaxGroups,
			"most consumer groups with members, and separately with committed offsets; a new group past it gets COORDINATOR_NOT_AVAILABLE until one empties or its offsets expire (0 or less: unlimited)"),
		maxOffsets: fs.Int("group-max-offsets", groups.DefaultMaxOffsetsPerGroup,
			"most partitions one consumer group may hold committed offsets for; a commit adding more gets INVALID_COMMIT_OFFSET_SIZE (0 or less: unlimited)"),
		maxPending: fs.Int("group-max-pending-per-client", groups.DefaultMaxPendingPerClient,
			"most member ids one client host may hold from JoinGroup's MEMBER_ID_REQUIRED without joining with them (they lapse within 10s); more get COORDINATOR_NOT_AVAILABLE (0 or less: unlimited)"),
		maxMetadataBytes: fs.Int("offset-metadata-max-bytes", groups.DefaultMaxMetadataBytes,
			"largest metadata string of a committed offset (Kafka's offset.metadata.max.bytes); larger gets OFFSET_METADATA_TOO_LARGE (0: 4096)"),
		consumerHeartbeat: fs.Duration("group-consumer-heartbeat-interval", 5*time.Second,
			"how often members of consumer-protocol groups (KIP-848, group.protocol=consumer) heartbeat, and so how soon they learn of a new assignment (Kafka's group.consumer.heartbeat.interval.ms)"),
		consumerSession: fs.Duration("group-consumer-session-timeout", 45*time.Second,
			"how long a consumer-protocol member may go without a heartbeat before it is removed and its partitions move (Kafka's group.consumer.session.timeout.ms)"),
	}
}

// apply sets the limits on opts.
func (f *groupLimitFlags) apply(opts *groups.Options) {
	opts.MaxGroupSize = unlimitedUnlessPositive(*f.maxSize)
	opts.MaxGroups = unlimitedUnlessPositive(*f.maxCount)
	opts.MaxOffsetsPerGroup = unlimitedUnlessPositive(*f.maxOffsets)
	opts.MaxPendingPerClient = unlimitedUnlessPositive(*f.maxPending)
	opts.MaxMetadataBytes = *f.maxMetadataBytes
	opts.ConsumerHeartbeatInterval = *f.consumerHeartbeat
	opts.ConsumerSessionTimeout = *f.consumerSession
}

// unlimitedUnlessPositive maps a count flag, where 0 or less means
// unlimited, to groups.Options, where 0 means the default and a negative
// count unlimited.
func unlimitedUnlessPositive(n int) int {
	if n <= 0 {
		return -1
	}
	return n
}
