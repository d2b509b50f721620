package groups

import (
	"bytes"
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// SyncGroup handles a SyncGroup request (v0-v5). The leader's request
// carries the assignment of every member; a follower's blocks until the
// leader's arrives, the group rebalances again, ctx is cancelled or the
// coordinator closes.
//
// Version notes: v3 adds group.instance.id; v5 adds the protocol type and
// name, which must match the group's (INCONSISTENT_GROUP_PROTOCOL).
func (c *Coordinator) SyncGroup(ctx context.Context, req *kmsg.SyncGroupRequest) *kmsg.SyncGroupResponse {
	c.mu.Lock()
	resp, wait := c.sync(req, time.Now())
	c.mu.Unlock()
	if wait == nil {
		return resp
	}
	select {
	case r := <-wait:
		return r
	case <-ctx.Done():
		// The wait ends with the leader's sync or the next rebalance,
		// both bounded by the sync deadline; the answer is dropped.
		return syncError(req.Version, kerr.RebalanceInProgress.Code)
	}
}

func (c *Coordinator) sync(req *kmsg.SyncGroupRequest, now time.Time) (*kmsg.SyncGroupResponse, chan *kmsg.SyncGroupResponse) {
	fail := func(code int16) (*kmsg.SyncGroupResponse, chan *kmsg.SyncGroupResponse) {
		return syncError(req.Version, code), nil
	}
	if code := c.groupCode(req.Group); code != 0 {
		return fail(code)
	}
	if req.Group == "" {
		return fail(kerr.InvalidGroupID.Code)
	}
	g := c.group(req.Group, false)
	if g == nil {
		return fail(kerr.UnknownMemberID.Code)
	}
	instanceID := req.InstanceID
	if req.Version < 3 {
		instanceID = nil
	}
	m, code := g.validateMember(req.MemberID, instanceID)
	if code != 0 {
		return fail(code)
	}
	if req.Generation != g.generation {
		return fail(kerr.IllegalGeneration.Code)
	}
	if (req.ProtocolType != nil && *req.ProtocolType != g.protocolType) ||
		(req.Protocol != nil && *req.Protocol != g.protocol) {
		return fail(kerr.InconsistentGroupProtocol.Code)
	}

	switch g.state {
	case statePreparingRebalance:
		return fail(kerr.RebalanceInProgress.Code)
	case stateCompletingRebalance:
		delete(g.pendingSync, m.id)
		m.heartbeat(now)
		if m.id == g.leader {
			g.completeSync(req)
			return g.syncResponse(req.Version, m), nil
		}
		if m.syncWait != nil { // a retry on another connection
			g.sendSync(m, syncError(m.syncVersion, kerr.RebalanceInProgress.Code))
		}
		m.syncWait = make(chan *kmsg.SyncGroupResponse, 1)
		m.syncVersion = req.Version
		return nil, m.syncWait
	case stateStable:
		// The leader already synced; hand out what it assigned.
		delete(g.pendingSync, m.id)
		m.heartbeat(now)
		return g.syncResponse(req.Version, m), nil
	default:
		return fail(kerr.UnknownMemberID.Code)
	}
}

// completeSync stores the leader's assignment, answers the followers
// already waiting and makes the group Stable. Members the leader did not
// mention get an empty assignment; entries for unknown members are
// ignored, as Kafka does.
func (g *group) completeSync(req *kmsg.SyncGroupRequest) {
	for _, m := range g.members {
		m.assignment = nil
	}
	for _, a := range req.GroupAssignment {
		if m := g.members[a.MemberID]; m != nil {
			m.assignment = bytes.Clone(a.MemberAssignment) // the request buffer may be reused
		}
	}
	g.state = stateStable
	if len(g.pendingSync) == 0 {
		g.pendingSync = nil
		g.syncDeadline = time.Time{}
	}
	for _, m := range g.members {
		if m.syncWait != nil {
			g.sendSync(m, g.syncResponse(m.syncVersion, m))
		}
	}
	g.c.log.Info().Str("group", g.name).Int32("generation", g.generation).
		Int("members", len(g.members)).Msg("rebalance complete; group stable")
}
