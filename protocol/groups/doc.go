// Package groups is the group coordinator of the classic Kafka consumer group
// protocol (JoinGroup, SyncGroup, Heartbeat, LeaveGroup, DescribeGroups,
// ListGroups) and the keeper of committed offsets (OffsetCommit, OffsetFetch),
// which it persists through an OffsetStore.
//
// It is part of the Kafka front end: it speaks kmsg requests and responses
// and chooses Kafka error codes. It must not import fetch/, topics/,
// changelog/, lake/ or lsm/.
package groups
