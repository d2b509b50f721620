package groups

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// JoinGroup handles a JoinGroup request (v0-v9). Like Kafka it blocks
// until the rebalance it joins completes, the rebalance timeout ends the
// wait, ctx is cancelled (the connection closed), or the coordinator
// closes.
//
// Version notes: v1 adds the rebalance timeout (v0 uses the session
// timeout); v4 makes a new dynamic member first get its id with
// MEMBER_ID_REQUIRED; v5 adds group.instance.id (static membership);
// v7 returns the protocol type; v8 adds a reason; v9 adds SkipAssignment,
// set for a static leader that rejoins a stable group (replaceStatic).
func (c *Coordinator) JoinGroup(ctx context.Context, req *kmsg.JoinGroupRequest) *kmsg.JoinGroupResponse {
	c.mu.Lock()
	resp, wait := c.join(ctx, req, time.Now())
	c.mu.Unlock()
	if wait == nil {
		return resp
	}
	select {
	case r := <-wait:
		return r
	case <-ctx.Done():
		// As in Kafka, the member still counts as joined: its answer goes
		// into the channel's slot and is dropped. If the client is gone
		// for good it will not sync, and the sync deadline removes it; if
		// it reconnects and joins again, that join takes over. Nobody
		// reads this response: the connection is closed.
		return joinError(req.Version, req.MemberID, kerr.RebalanceInProgress.Code)
	}
}

// join decides a JoinGroup under c.mu. It returns either a response or a
// channel the response will be sent on.
func (c *Coordinator) join(ctx context.Context, req *kmsg.JoinGroupRequest, now time.Time) (resp *kmsg.JoinGroupResponse, wait chan *kmsg.JoinGroupResponse) {
	fail := func(code int16) (*kmsg.JoinGroupResponse, chan *kmsg.JoinGroupResponse) {
		return joinError(req.Version, req.MemberID, code), nil
	}
	if code := c.groupCode(req.Group); code != 0 {
		return fail(code)
	}
	if !ValidGroupID(req.Group) {
		return fail(kerr.InvalidGroupID.Code)
	}
	session := time.Duration(req.SessionTimeoutMillis) * time.Millisecond
	if session < c.opts.MinSessionTimeout || session > c.opts.MaxSessionTimeout {
		return fail(kerr.InvalidSessionTimeout.Code)
	}
	rebalance := time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	if req.Version == 0 || rebalance <= 0 {
		rebalance = session
	}
	if req.ProtocolType == "" || len(req.Protocols) == 0 {
		return fail(kerr.InconsistentGroupProtocol.Code)
	}
	instanceID := req.InstanceID
	if req.Version < 5 {
		instanceID = nil
	}
	if !validInstanceID(instanceID) {
		return fail(kerr.InvalidRequest.Code)
	}

	g := c.group(req.Group, req.MemberID == "")
	switch {
	case g == nil && req.MemberID == "":
		// MaxGroups reached. Retriable: room is made as groups empty.
		return fail(kerr.CoordinatorNotAvailable.Code)
	case g == nil:
		return fail(kerr.UnknownMemberID.Code)
	case g.consumer != nil && len(g.consumer.members) > 0:
		// A consumer-protocol group (KIP-848) takes no classic members:
		// Kafka's answer with its migration policy disabled.
		c.log.Debug().Str("group", g.name).Msg("classic join to a consumer group refused")
		return fail(kerr.InconsistentGroupProtocol.Code)
	case g.consumer != nil:
		// An empty consumer group becomes a classic one again, offsets
		// kept, as Kafka converts it.
		g.consumer = nil
		g.protocolType = ""
	}
	j := joining{
		req:       req,
		ci:        clientFrom(ctx),
		session:   session,
		rebalance: rebalance,
		instance:  instanceID,
		now:       now,
	}
	if req.MemberID == "" {
		resp, wait = g.joinNew(j)
	} else {
		resp, wait = g.joinKnown(j)
	}
	c.forget(g) // a refused first join leaves nothing behind
	return resp, wait
}

// joining carries a validated JoinGroup through the group's decision.
type joining struct {
	req       *kmsg.JoinGroupRequest
	ci        clientInfo
	session   time.Duration
	rebalance time.Duration
	instance  *string
	now       time.Time
}

func (j joining) fail(code int16, memberID string) (*kmsg.JoinGroupResponse, chan *kmsg.JoinGroupResponse) {
	return joinError(j.req.Version, memberID, code), nil
}

// full reports whether MaxGroupSize forbids another member.
func (g *group) full() bool {
	return atLimit(len(g.members)+len(g.pending), g.c.opts.MaxGroupSize)
}

// joinNew handles a join without a member id.
func (g *group) joinNew(j joining) (*kmsg.JoinGroupResponse, chan *kmsg.JoinGroupResponse) {
	if !g.supportsProtocols(j.req.ProtocolType, j.req.Protocols, "") {
		return j.fail(kerr.InconsistentGroupProtocol.Code, "")
	}
	id := newMemberID(j.ci.id, j.instance)
	if j.instance != nil {
		if old := g.members[g.static[*j.instance]]; old != nil {
			return g.replaceStatic(old, id, j)
		}
	}
	if g.full() {
		return j.fail(kerr.GroupMaxSizeReached.Code, "")
	}
	if j.instance == nil && j.req.Version >= 4 {
		// KIP-394: hand out the id first, so a client that retries a join
		// whose answer it lost does not leave a ghost member behind.
		if g.c.pendingFull(j.ci.host) {
			// Retriable: the client asks again once its earlier ids lapsed.
			return j.fail(kerr.CoordinatorNotAvailable.Code, "")
		}
		g.addPending(id, j.ci.host, j.now, j.session)
		g.c.log.Debug().Str("group", g.name).Str("member", id).Msg("member id required")
		return j.fail(kerr.MemberIDRequired.Code, id)
	}
	return g.addMember(id, j)
}

// joinKnown handles a join from a member that has its id.
func (g *group) joinKnown(j joining) (*kmsg.JoinGroupResponse, chan *kmsg.JoinGroupResponse) {
	id := j.req.MemberID
	if _, ok := g.pending[id]; ok {
		if !g.supportsProtocols(j.req.ProtocolType, j.req.Protocols, "") {
			return j.fail(kerr.InconsistentGroupProtocol.Code, id)
		}
		g.takePending(id)
		return g.addMember(id, j)
	}
	m, code := g.validateMember(id, j.instance)
	if code != 0 {
		return j.fail(code, id)
	}
	if !g.supportsProtocols(j.req.ProtocolType, j.req.Protocols, id) {
		return j.fail(kerr.InconsistentGroupProtocol.Code, id)
	}
	switch g.state {
	case statePreparingRebalance:
		wait := g.awaitJoin(m, j)
		g.tryCompleteJoin()
		return nil, wait
	case stateCompletingRebalance:
		if m.sameProtocols(j.req.ProtocolType, j.req.Protocols) {
			// A retry of a join whose answer was lost: answer again.
			m.heartbeat(j.now)
			return g.joinResponse(j.req.Version, m), nil
		}
		wait := g.awaitJoin(m, j)
		g.prepareRebalance("member changed its protocols")
		return nil, wait
	case stateStable:
		if m.id != g.leader && m.sameProtocols(j.req.ProtocolType, j.req.Protocols) {
			// A follower rejoining with nothing new: no reason to disturb
			// the group; it syncs again and gets its assignment.
			m.heartbeat(j.now)
			return g.joinResponse(j.req.Version, m), nil
		}
		wait := g.awaitJoin(m, j)
		reason := "leader rejoined"
		if m.id != g.leader {
			reason = "member changed its protocols"
		}
		g.prepareRebalance(reason)
		return nil, wait
	default:
		return j.fail(kerr.UnknownMemberID.Code, id)
	}
}

// addMember adds a new member that waits in its JoinGroup for the
// rebalance this starts (or joins).
func (g *group) addMember(id string, j joining) (*kmsg.JoinGroupResponse, chan *kmsg.JoinGroupResponse) {
	if len(g.members) == 0 {
		g.protocolType = j.req.ProtocolType
	}
	m := &member{id: id, instanceID: cloneStringPtr(j.instance)}
	g.members[id] = m
	if m.instanceID != nil {
		g.static[*m.instanceID] = id
	}
	wait := g.awaitJoin(m, j)
	g.c.log.Debug().Str("group", g.name).Str("member", id).Str("client", j.ci.id).Msg("member joined")
	g.memberChanged("new member " + id)
	return nil, wait
}

// awaitJoin records the join on m and returns the channel its answer will
// arrive on. An older blocked join of the same member (a client retry on
// another connection) is answered first, so no request is left hanging.
func (g *group) awaitJoin(m *member, j joining) chan *kmsg.JoinGroupResponse {
	if m.joinWait != nil {
		g.sendJoin(m, joinError(m.joinVersion, m.id, kerr.RebalanceInProgress.Code))
	}
	m.setJoin(j.req, j.ci, j.session, j.rebalance)
	m.joinWait = make(chan *kmsg.JoinGroupResponse, 1)
	m.joinVersion = j.req.Version
	return m.joinWait
}

// replaceStatic handles a static member that joins again without its
// member id, typically after a restart: the new join takes over the
// instance id under a new member id and the old id is fenced.
func (g *group) replaceStatic(old *member, id string, j joining) (*kmsg.JoinGroupResponse, chan *kmsg.JoinGroupResponse) {
	g.failMember(old, kerr.FencedInstanceID.Code)
	wasLeader := old.id == g.leader

	m := &member{
		id:         id,
		instanceID: old.instanceID,
		assignment: old.assignment,
	}
	m.setJoin(j.req, j.ci, j.session, j.rebalance)
	delete(g.members, old.id)
	g.members[id] = m
	// As Kafka: the rejoin changes nothing when the group would select
	// the same protocol. The metadata may differ, and does: a restarted
	// consumer's subscription carries no owned partitions and generation
	// -1 (ConsumerProtocolSubscription v1-v3), so comparing it would
	// rebalance on every restart.
	selected, ok := g.selectProtocol()
	unchanged := ok && selected == g.protocol && m.protocolType == g.protocolType
	g.static[*m.instanceID] = id
	if wasLeader {
		g.leader = id
	}
	if _, ok := g.pendingSync[old.id]; ok {
		delete(g.pendingSync, old.id)
		g.pendingSync[id] = struct{}{}
	}
	g.c.log.Info().Str("group", g.name).Str("instance", *m.instanceID).
		Str("old_member", old.id).Str("member", id).Msg("static member replaced")

	if g.state == stateStable && unchanged && (!wasLeader || j.req.Version >= 9) {
		// KIP-345: a known static member coming back is given the
		// current generation and its old assignment, without a rebalance.
		// The leader too, from v9 (KIP-814): it is told to skip the
		// assignment, and its SyncGroup gets its old one back. An older
		// leader could not be told, and would assign again for nothing:
		// it rebalances instead.
		m.heartbeat(j.now)
		resp := g.joinResponse(j.req.Version, m)
		resp.SkipAssignment = wasLeader
		return resp, nil
	}
	wait := g.awaitJoin(m, j)
	if g.state == statePreparingRebalance {
		g.tryCompleteJoin()
	} else {
		g.prepareRebalance("static member " + *m.instanceID + " rejoined")
	}
	return nil, wait
}

func cloneStringPtr(s *string) *string {
	if s == nil {
		return nil
	}
	v := *s
	return &v
}
