package protocol

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lakegw/lakegw/protocol/groups"
)

// The classic group protocol and committed offsets are answered by the
// coordinator in protocol/groups, which documents what each version adds
// and owns the version ranges registered here.
func init() {
	registerGroupAPI(kmsg.JoinGroup, func(ctx context.Context, c *conn, r *kmsg.JoinGroupRequest) (kmsg.Response, error) {
		return c.s.groups.JoinGroup(ctx, r), nil
	})
	registerGroupAPI(kmsg.SyncGroup, func(ctx context.Context, c *conn, r *kmsg.SyncGroupRequest) (kmsg.Response, error) {
		return c.s.groups.SyncGroup(ctx, r), nil
	})
	registerGroupAPI(kmsg.Heartbeat, func(ctx context.Context, c *conn, r *kmsg.HeartbeatRequest) (kmsg.Response, error) {
		return c.s.groups.Heartbeat(ctx, r), nil
	})
	registerGroupAPI(kmsg.LeaveGroup, func(ctx context.Context, c *conn, r *kmsg.LeaveGroupRequest) (kmsg.Response, error) {
		return c.s.groups.LeaveGroup(ctx, r), nil
	})
	registerGroupAPI(kmsg.DescribeGroups, func(ctx context.Context, c *conn, r *kmsg.DescribeGroupsRequest) (kmsg.Response, error) {
		return c.s.groups.DescribeGroups(ctx, r), nil
	})
	registerGroupAPI(kmsg.ListGroups, func(ctx context.Context, c *conn, r *kmsg.ListGroupsRequest) (kmsg.Response, error) {
		return c.s.groups.ListGroups(ctx, r), nil
	})
	registerGroupAPI(kmsg.OffsetCommit, func(ctx context.Context, c *conn, r *kmsg.OffsetCommitRequest) (kmsg.Response, error) {
		return c.s.groups.OffsetCommit(ctx, r), nil
	})
	registerGroupAPI(kmsg.OffsetFetch, func(ctx context.Context, c *conn, r *kmsg.OffsetFetchRequest) (kmsg.Response, error) {
		return c.s.groups.OffsetFetch(ctx, r), nil
	})
	registerGroupAPI(kmsg.DeleteGroups, func(ctx context.Context, c *conn, r *kmsg.DeleteGroupsRequest) (kmsg.Response, error) {
		return c.s.groups.DeleteGroups(ctx, r), nil
	})
	registerGroupAPI(kmsg.OffsetDelete, func(ctx context.Context, c *conn, r *kmsg.OffsetDeleteRequest) (kmsg.Response, error) {
		return c.s.groups.OffsetDelete(ctx, r), nil
	})
	registerGroupAPI(kmsg.ConsumerGroupHeartbeat, func(ctx context.Context, c *conn, r *kmsg.ConsumerGroupHeartbeatRequest) (kmsg.Response, error) {
		return c.s.groups.ConsumerGroupHeartbeat(ctx, r), nil
	})
	registerGroupAPI(kmsg.ConsumerGroupDescribe, func(ctx context.Context, c *conn, r *kmsg.ConsumerGroupDescribeRequest) (kmsg.Response, error) {
		return c.s.groups.ConsumerGroupDescribe(ctx, r), nil
	})
}

func registerGroupAPI[Req kmsg.Request](key kmsg.Key, fn func(ctx context.Context, c *conn, req Req) (kmsg.Response, error)) {
	lo, hi, ok := groups.SupportedVersions(key)
	if !ok {
		panic("protocol/groups does not answer " + key.Name())
	}
	register(key, lo, hi, fn)
}
