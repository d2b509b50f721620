package groups

import "github.com/twmb/franz-go/pkg/kmsg"

// supported is the version range of each API this package answers. The
// lower bounds of OffsetCommit and OffsetFetch drop the versions that
// stored offsets in ZooKeeper (v0) or had no generation (OffsetCommit v1).
var supported = map[kmsg.Key][2]int16{
	kmsg.OffsetCommit:   {2, 10},
	kmsg.OffsetFetch:    {1, 10},
	kmsg.JoinGroup:      {0, 9},
	kmsg.Heartbeat:      {0, 4},
	kmsg.LeaveGroup:     {0, 5},
	kmsg.SyncGroup:      {0, 5},
	kmsg.DescribeGroups: {0, 6},
	kmsg.ListGroups:     {0, 5},
	kmsg.DeleteGroups:   {0, 3},
	kmsg.OffsetDelete:   {0, 0},

	kmsg.ConsumerGroupHeartbeat: {0, 1},
	kmsg.ConsumerGroupDescribe:  {0, 1},
}

// SupportedVersions returns the request versions of key that the
// coordinator answers, for the protocol layer's ApiVersions response; ok
// is false for APIs that are not group APIs.
func SupportedVersions(key kmsg.Key) (minVersion, maxVersion int16, ok bool) {
	r, ok := supported[key]
	return r[0], r[1], ok
}
