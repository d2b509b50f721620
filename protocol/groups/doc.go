// Package groups is the group coordinator of both Kafka consumer group
// protocols: the classic one (JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
// DescribeGroups) and the consumer protocol of KIP-848
// (ConsumerGroupHeartbeat, ConsumerGroupDescribe: consumer_*.go, where the
// coordinator assigns), with ListGroups and DeleteGroups for both; and the
// keeper of committed offsets (OffsetCommit, OffsetFetch, OffsetDelete, and a
// transaction's offsets once it commits), which it persists through an
// OffsetStore.
//
// It is part of the Kafka front end: it speaks kmsg requests and responses
// and chooses Kafka error codes. It must not import fetch/, topics/,
// derive/, changelog/, lake/, lsm/ or state/ (state/ implements its
// OffsetStore).
//
// How it works. The protocol layer decodes a request, calls the method of
// the same name on the Coordinator (JoinGroup, SyncGroup, Heartbeat,
// LeaveGroup, DescribeGroups, ListGroups, OffsetCommit, OffsetFetch) with a
// context that ends with the connection, and encodes the response, whose
// Version is the request's. SupportedVersions gives the version ranges to
// advertise in ApiVersions; WithClient passes the client id and host.
//
// This node coordinates every group. Membership state (group.go,
// member.go) sits behind one mutex; JoinGroup and SyncGroup block their
// caller's goroutine on a one-slot channel until the rebalance
// (rebalance.go) answers them. One goroutine, owned by the Coordinator and
// stopped by Close, sleeps until the earliest deadline (session expiry,
// end of a join or sync wait) and applies it. Committed offsets
// (offsets.go) are saved to the OffsetStore before a commit is
// acknowledged and loaded from it by Open. A second goroutine, also
// stopped by Close, expires the offsets of groups left empty longer than
// Options.OffsetsRetention (offset_expiry.go), so dead groups stop pinning
// table history; CommittedOffsets tells the gateway what the rest pin.
//
// A consumer-protocol group moves each member towards the target
// assignment of the group epoch one heartbeat at a time, a partition going
// to its new owner only once its old owner revoked it (consumer_group.go);
// the target is computed by a server-side assignor (consumer_assignors.go)
// when the group epoch changes. Topics are named by id there, from
// Options.Topics, looked at before the coordinator's lock is taken.
//
// Bounds. Whatever a client sends, what the coordinator keeps is bounded
// (limits.go, pending.go): ids of at most 249 bytes, Options.MaxGroupSize
// members a group, Options.MaxGroups groups with members and as many with
// committed offsets, Options.MaxPendingPerClient pending member ids per
// client host (each lapsing within Options.PendingMemberTimeout), offsets
// only for partitions the gateway serves, metadata of at most
// Options.MaxMetadataBytes; for consumer-protocol members, at most 1,000
// subscribed names, a subscription regex of bounded program size, 100,000
// owned partitions a heartbeat (consumer_heartbeat.go). Each refusal
// carries the Kafka error code a client knows how to handle.
package groups
