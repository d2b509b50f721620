package groups

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"regexp"
	"regexp/syntax"
	"slices"
	"time"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Defaults of the consumer group protocol, Kafka's broker configuration.
const (
	defaultConsumerHeartbeatInterval = 5 * time.Second  // group.consumer.heartbeat.interval.ms
	defaultConsumerSessionTimeout    = 45 * time.Second // group.consumer.session.timeout.ms
)

// ConsumerGroupHeartbeat handles a ConsumerGroupHeartbeat request (v0-v1),
// the one request of the KIP-848 consumer group protocol: a member joins
// with epoch 0, heartbeats with its epoch, and leaves with -1 (or -2, a
// static member that will be back). Each heartbeat may carry what changed
// (subscription, assignor, the partitions the member owns) and is
// answered with the member's epoch and, when it changed, its assignment.
//
// Version notes: v1 adds the subscribed topic regex (RE2 syntax, matched
// against whole topic names, as Kafka matches it with RE2/J) and makes the
// client choose its member id (KIP-1082).
//
// A consumer-protocol member may join a group without classic members:
// an empty classic group (one with committed offsets only) becomes a
// consumer group and keeps its offsets, as in Kafka. A classic group with
// members is answered GROUP_ID_NOT_FOUND, which is what Kafka answers with
// group.consumer.migration.policy=disabled: the online migration of a
// group with live classic members is not implemented.
func (c *Coordinator) ConsumerGroupHeartbeat(ctx context.Context, req *kmsg.ConsumerGroupHeartbeatRequest) *kmsg.ConsumerGroupHeartbeatResponse {
	resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	resp.Version = req.Version
	fail := func(code int16, msg string) *kmsg.ConsumerGroupHeartbeatResponse {
		resp.ErrorCode = code
		if msg != "" {
			resp.ErrorMessage = kmsg.StringPtr(msg)
		}
		resp.MemberEpoch = req.MemberEpoch
		return resp
	}
	if code := c.groupCode(req.Group); code != 0 {
		return fail(code, "")
	}
	if code, msg := validHeartbeat(req); code != 0 {
		return fail(code, msg)
	}
	var regex *regexp.Regexp
	if req.SubscribedTopicRegex != nil && *req.SubscribedTopicRegex != "" {
		re, err := compileSubscription(*req.SubscribedTopicRegex)
		if err != nil {
			return fail(kerr.InvalidRegularExpression.Code, fmt.Sprintf("SubscribedTopicRegex %q is invalid: %v", *req.SubscribedTopicRegex, err))
		}
		regex = re
	}
	// What the member owns, sorted, before the lock: building it is the
	// one cost of a heartbeat that grows with what a client sends.
	owned, code := ownedPartitions(req.Topics)
	if code != 0 {
		return fail(code, fmt.Sprintf("at most %d owned partitions", maxOwnedPartitions))
	}
	view := c.topicView()
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	view = c.adoptView(view)
	h := consumerHeartbeat{c: c, req: req, ci: clientFrom(ctx), view: view, regex: regex, owned: owned, now: now, resp: resp}
	if code, msg := h.run(); code != 0 {
		return fail(code, msg)
	}
	return resp
}

// validHeartbeat checks a heartbeat's fields as Kafka's
// throwIfConsumerGroupHeartbeatRequestIsInvalid does.
func validHeartbeat(req *kmsg.ConsumerGroupHeartbeatRequest) (int16, string) {
	switch {
	case req.Group == "":
		return kerr.InvalidRequest.Code, "GroupId can't be empty."
	case !ValidGroupID(req.Group):
		return kerr.InvalidGroupID.Code, ""
	case req.InstanceID != nil && (*req.InstanceID == "" || !validInstanceID(req.InstanceID)):
		return kerr.InvalidRequest.Code, "InstanceId can't be empty."
	case req.RackID != nil && *req.RackID == "":
		return kerr.InvalidRequest.Code, "RackId can't be empty."
	case req.RackID != nil && len(*req.RackID) > maxIDBytes:
		return kerr.InvalidRequest.Code, "RackId is too long."
	case req.Version >= 1 && req.MemberID == "":
		return kerr.InvalidRequest.Code, "MemberId can't be empty."
	case req.MemberEpoch != joinEpoch && req.MemberID == "":
		return kerr.InvalidRequest.Code, "MemberId can't be empty."
	case len(req.MemberID) > maxIDBytes:
		return kerr.InvalidRequest.Code, "MemberId is too long."
	case req.MemberEpoch < staticLeaveEpoch:
		return kerr.InvalidRequest.Code, "MemberEpoch is invalid."
	case req.MemberEpoch == staticLeaveEpoch && req.InstanceID == nil:
		return kerr.InvalidRequest.Code, "InstanceId can't be null when MemberEpoch is -2."
	case req.ServerAssignor != nil && !knownAssignor(*req.ServerAssignor):
		return kerr.UnsupportedAssignor.Code, fmt.Sprintf("ServerAssignor %s is not supported. Supported assignors: %s, %s.", *req.ServerAssignor, assignorUniform, assignorRange)
	}
	if req.MemberEpoch == joinEpoch {
		switch {
		case req.RebalanceTimeoutMillis == -1:
			return kerr.InvalidRequest.Code, "RebalanceTimeoutMs must be provided in first request."
		case req.Topics == nil || len(req.Topics) > 0:
			return kerr.InvalidRequest.Code, "TopicPartitions must be empty when (re-)joining."
		case req.SubscribedTopicNames == nil && req.SubscribedTopicRegex == nil:
			return kerr.InvalidRequest.Code, "SubscribedTopicNames or SubscribedTopicRegex must be set in first request."
		}
	}
	if len(req.SubscribedTopicNames) > maxSubscribedTopics {
		return kerr.InvalidRequest.Code, fmt.Sprintf("at most %d subscribed topics", maxSubscribedTopics)
	}
	for _, name := range req.SubscribedTopicNames {
		if len(name) > maxIDBytes {
			return kerr.InvalidRequest.Code, "a subscribed topic name is longer than any topic's"
		}
	}
	if req.SubscribedTopicRegex != nil && len(*req.SubscribedTopicRegex) > maxRegexBytes {
		return kerr.InvalidRequest.Code, fmt.Sprintf("SubscribedTopicRegex is over %d bytes", maxRegexBytes)
	}
	return 0, ""
}

// What one member's heartbeat may hold: with MaxGroupSize members, a
// group's subscriptions stay within a few hundred MiB, and a heartbeat's
// work under the coordinator's lock small, whatever clients send.
const (
	maxSubscribedTopics = 1000
	maxRegexBytes       = 4096
	// maxRegexInsts bounds the compiled program of a subscription regex:
	// RE2 matches in time linear in program size times name length, and
	// every topic name is matched against it when the topics change.
	maxRegexInsts = 2000
	// maxOwnedPartitions bounds the partitions a heartbeat says it owns.
	maxOwnedPartitions = 100_000
)

// compileSubscription compiles a subscription regex (RE2, as Kafka's
// RE2/J), anchored at both ends as Kafka matches whole topic names, and
// refuses one whose program is too large to match cheaply.
func compileSubscription(expr string) (*regexp.Regexp, error) {
	anchored := "^(?:" + expr + ")$"
	parsed, err := syntax.Parse(anchored, syntax.Perl)
	if err != nil {
		return nil, err
	}
	prog, err := syntax.Compile(parsed.Simplify())
	if err != nil {
		return nil, err
	}
	if len(prog.Inst) > maxRegexInsts {
		return nil, fmt.Errorf("compiles to %d instructions, more than %d", len(prog.Inst), maxRegexInsts)
	}
	return regexp.Compile(anchored)
}

// ownedPartitions is what a heartbeat's Topics say the member owns
// (nil: not said), or INVALID_REQUEST when that is more than any member
// may own.
func ownedPartitions(topics []kmsg.ConsumerGroupHeartbeatRequestTopic) (topicPartitions, int16) {
	if topics == nil {
		return nil, 0
	}
	out := make(topicPartitions, len(topics))
	n := 0
	for _, t := range topics {
		n += len(t.Partitions)
		if n > maxOwnedPartitions {
			return nil, kerr.InvalidRequest.Code
		}
		out[t.TopicID] = append(out[t.TopicID], t.Partitions...)
	}
	for t, ps := range out {
		slices.Sort(ps)
		out[t] = slices.Compact(ps)
	}
	return out, 0
}

// consumerHeartbeat carries one ConsumerGroupHeartbeat through the coordinator,
// under its lock.
type consumerHeartbeat struct {
	c     *Coordinator
	req   *kmsg.ConsumerGroupHeartbeatRequest
	ci    clientInfo
	view  topicView
	regex *regexp.Regexp
	owned topicPartitions // what the member says it owns; nil: not said
	now   time.Time
	resp  *kmsg.ConsumerGroupHeartbeatResponse
}

func (h consumerHeartbeat) run() (int16, string) {
	req := h.req
	if req.MemberEpoch == leaveEpoch || req.MemberEpoch == staticLeaveEpoch {
		return h.leave()
	}
	g := h.c.group(req.Group, req.MemberEpoch == joinEpoch)
	if g == nil {
		if req.MemberEpoch == joinEpoch {
			return kerr.CoordinatorNotAvailable.Code, "" // MaxGroups reached; retriable
		}
		// The gateway restarted (membership is not persisted) or the group
		// emptied: the member rejoins with epoch 0.
		return kerr.UnknownMemberID.Code, ""
	}
	defer h.c.forget(g)
	if g.consumer == nil {
		switch {
		case !g.empty():
			return kerr.GroupIDNotFound.Code, fmt.Sprintf("Group %s is not a consumer group.", g.name)
		case req.MemberEpoch != joinEpoch:
			return kerr.UnknownMemberID.Code, ""
		}
		g.toConsumer()
	}
	cg := g.consumer
	var m *consumerMember
	bump := false
	if req.MemberEpoch == joinEpoch {
		var code int16
		var msg string
		if m, bump, code, msg = h.join(g); code != 0 {
			return code, msg
		}
	} else {
		m = cg.members[req.MemberID]
		if m == nil || m.staticLeft {
			return kerr.UnknownMemberID.Code, fmt.Sprintf("Member %s is not a member of group %s.", req.MemberID, g.name)
		}
		if req.InstanceID != nil && cg.static[*req.InstanceID] != m.id {
			return kerr.FencedInstanceID.Code, ""
		}
		if req.MemberEpoch != m.epoch && !(req.MemberEpoch == m.prevEpoch && h.owned != nil && h.ownedWithin(m.assigned)) {
			// A newer epoch than the member's is a client bug or a fenced
			// zombie; an older one is fine only when the member lost the
			// answer that moved it on (it still owns only what it may).
			return kerr.FencedMemberEpoch.Code, fmt.Sprintf("The consumer group member has a smaller member epoch (%d) than the one known by the group coordinator (%d).", req.MemberEpoch, m.epoch)
		}
	}
	if h.update(m) {
		bump = true
	}
	m.deadline = h.now.Add(h.c.opts.ConsumerSessionTimeout)
	cg.refresh(g, h.view, bump)

	before := m.assigned.clone()
	cg.reconcile(m, h.owned, h.now)
	h.c.schedule(m.deadline)
	if !m.revokeDeadline.IsZero() {
		h.c.schedule(m.revokeDeadline)
	}

	h.resp.MemberID = kmsg.StringPtr(m.id)
	h.resp.MemberEpoch = m.epoch
	h.resp.HeartbeatIntervalMillis = int32(h.c.opts.ConsumerHeartbeatInterval / time.Millisecond)
	// As Kafka: the assignment goes out when it changed, and on a full
	// request (a join, or a member resending everything after an error).
	full := req.MemberEpoch == joinEpoch ||
		(req.RebalanceTimeoutMillis != -1 && (req.SubscribedTopicNames != nil || req.SubscribedTopicRegex != nil) && req.Topics != nil)
	if full || !before.equal(m.assigned) {
		h.resp.Assignment = responseAssignment(m.assigned)
	}
	return 0, ""
}

// ownedWithin reports whether the partitions the request says the member
// owns are all within a.
func (h consumerHeartbeat) ownedWithin(a topicPartitions) bool {
	for t, ps := range h.owned {
		for _, p := range ps {
			if !a.contains(t, p) {
				return false
			}
		}
	}
	return true
}

// join adds a member joining with epoch 0: a new member, a static member
// coming back (which takes over its predecessor's assignment), or a member
// that was fenced and starts over.
func (h consumerHeartbeat) join(g *group) (m *consumerMember, bump bool, code int16, msg string) {
	cg := g.consumer
	req := h.req
	id := req.MemberID
	if id == "" {
		id = uuid.NewString() // v0: the coordinator names the member
	}
	if req.InstanceID != nil {
		if oldID, ok := cg.static[*req.InstanceID]; ok {
			old := cg.members[oldID]
			if old != nil && !old.staticLeft && old.id != id {
				return nil, false, kerr.UnreleasedInstanceID.Code, fmt.Sprintf("Static member %s with instance id %s is not released yet.", old.id, *req.InstanceID)
			}
			if old != nil {
				// KIP-345 for the consumer protocol: the new member takes
				// over the old one's epoch and assignment, with no new
				// group epoch when nothing else changed.
				m = &consumerMember{id: id, instanceID: cloneStringPtr(req.InstanceID), epoch: old.epoch, prevEpoch: old.prevEpoch,
					state: old.state, assigned: old.assigned, revoking: old.revoking, since: old.since, revokeDeadline: old.revokeDeadline,
					subscribedNames: old.subscribedNames, subscribedRegex: old.subscribedRegex, regex: old.regex,
					assignor: old.assignor, rebalanceTimeout: old.rebalanceTimeout, rackID: old.rackID}
				delete(cg.members, old.id)
				cg.target[id] = cg.target[old.id]
				delete(cg.target, old.id)
				cg.members[id] = m
				cg.static[*req.InstanceID] = id
				h.c.log.Info().Str("group", g.name).Str("instance", *req.InstanceID).Str("old_member", old.id).
					Str("member", id).Msg("static member replaced")
				return m, false, 0, ""
			}
		}
	}
	if old := cg.members[id]; old != nil {
		// A member that was fenced rejoins under its id with nothing
		// owned: it starts over.
		cg.remove(old)
	} else if atLimit(len(cg.members), h.c.opts.MaxGroupSize) {
		return nil, false, kerr.GroupMaxSizeReached.Code, ""
	}
	m = &consumerMember{id: id, instanceID: cloneStringPtr(req.InstanceID), assigned: make(topicPartitions)}
	cg.members[id] = m
	if m.instanceID != nil {
		cg.static[*m.instanceID] = id
	}
	h.c.log.Debug().Str("group", g.name).Str("member", id).Str("client", h.ci.id).Msg("consumer member joined")
	return m, true, 0, ""
}

// update applies what the heartbeat says changed about m; it reports
// whether the group's assignment depends on the change.
func (h consumerHeartbeat) update(m *consumerMember) bool {
	req := h.req
	changed := false
	m.clientID, m.clientHost = h.ci.id, h.ci.host
	if req.RackID != nil {
		m.rackID = cloneStringPtr(req.RackID)
	}
	if req.RebalanceTimeoutMillis != -1 {
		m.rebalanceTimeout = time.Duration(req.RebalanceTimeoutMillis) * time.Millisecond
	}
	if req.SubscribedTopicNames != nil {
		names := slices.Clone(req.SubscribedTopicNames)
		slices.Sort(names)
		names = slices.Compact(names)
		if !slices.Equal(names, m.subscribedNames) {
			m.subscribedNames, changed = names, true
			m.resolved = false
		}
	}
	if req.SubscribedTopicRegex != nil {
		if re := *req.SubscribedTopicRegex; m.subscribedRegex == nil || *m.subscribedRegex != re {
			m.subscribedRegex, m.regex, changed = kmsg.StringPtr(re), h.regex, true
			m.resolved = false
			if re == "" {
				m.subscribedRegex, m.regex = nil, nil
			}
		}
	}
	if req.ServerAssignor != nil && *req.ServerAssignor != m.assignor {
		m.assignor, changed = *req.ServerAssignor, true
	}
	return changed
}

// leave handles epoch -1 (the member leaves) and -2 (a static member
// leaves for now, keeping its assignment until its session expires).
func (h consumerHeartbeat) leave() (int16, string) {
	req := h.req
	g := h.c.groups[req.Group]
	if g == nil || g.consumer == nil {
		return kerr.GroupIDNotFound.Code, fmt.Sprintf("Group %s not found.", req.Group)
	}
	defer h.c.forget(g)
	cg := g.consumer
	if req.InstanceID != nil {
		// A stale process of a static member must not take its
		// successor out of the group (Kafka's throwIfInstanceIdIsFenced).
		if cur, ok := cg.static[*req.InstanceID]; ok && cur != req.MemberID {
			return kerr.FencedInstanceID.Code, ""
		}
	}
	m := cg.members[req.MemberID]
	if m == nil {
		return kerr.UnknownMemberID.Code, ""
	}
	if req.MemberEpoch == staticLeaveEpoch && (m.instanceID == nil || *m.instanceID != *req.InstanceID) {
		return kerr.FencedInstanceID.Code, ""
	}
	h.resp.MemberID = kmsg.StringPtr(req.MemberID)
	h.resp.MemberEpoch = req.MemberEpoch
	if req.MemberEpoch == staticLeaveEpoch {
		// Gone for now: what it was revoking is released at once (it
		// consumes nothing until it is back); what it keeps waits for it.
		m.staticLeft = true
		m.releaseRevoking()
		m.deadline = h.now.Add(h.c.opts.ConsumerSessionTimeout)
		h.c.schedule(m.deadline)
		h.c.log.Debug().Str("group", g.name).Str("member", m.id).Msg("static consumer member left temporarily")
		return 0, ""
	}
	cg.remove(m)
	g.consumerMemberRemoved()
	cg.refresh(g, h.view, true)
	h.c.log.Debug().Str("group", g.name).Str("member", m.id).Msg("consumer member left")
	return 0, ""
}

// toConsumer turns an empty classic group (committed offsets only) into a
// consumer group.
func (g *group) toConsumer() {
	g.consumer = newConsumerGroup()
	g.protocolType = "consumer"
	g.protocol = ""
	g.leader = ""
	g.state = stateEmpty
}

// consumerMemberRemoved starts the retention clock of the group's offsets
// when its last member is gone, as removeMember does for classic groups.
func (g *group) consumerMemberRemoved() {
	if len(g.consumer.members) == 0 {
		g.c.offsets.touch(g.name, g.c.opts.Now())
	}
}

// remove drops m from the group; the caller bumps the group epoch.
func (cg *consumerGroup) remove(m *consumerMember) {
	delete(cg.members, m.id)
	delete(cg.target, m.id)
	if m.instanceID != nil && cg.static[*m.instanceID] == m.id {
		delete(cg.static, *m.instanceID)
	}
}

// refresh bumps the group epoch when bump is set or the subscribed
// topics' partitions changed, and then computes the new target assignment.
func (cg *consumerGroup) refresh(g *group, view topicView, bump bool) {
	subscribed, partitions := view.subscribed(cg)
	if !bump && maps.Equal(partitions, cg.topics) {
		return
	}
	cg.epoch++
	cg.topics = partitions
	ids := slices.Sorted(maps.Keys(cg.members))
	cg.assignor = cg.chooseAssignor()
	cg.target = assign(cg.assignor, assignInput{members: ids, subscribed: subscribed, partitions: partitions, previous: cg.target})
	cg.assignmentEpoch = cg.epoch
	g.c.log.Debug().Str("group", g.name).Int32("epoch", cg.epoch).Int("members", len(ids)).Str("assignor", cg.assignor).
		Msg("consumer group target assignment")
}

// chooseAssignor picks the assignor most members ask for (ties by name),
// the default uniform one when none asks, as Kafka's coordinator does.
func (cg *consumerGroup) chooseAssignor() string {
	votes := map[string]int{}
	for _, m := range cg.members {
		if m.assignor != "" {
			votes[m.assignor]++
		}
	}
	best := assignorUniform
	for _, name := range []string{assignorRange, assignorUniform} {
		if votes[name] > votes[best] {
			best = name
		}
	}
	return best
}

// expireConsumers removes members whose session expired or who did not
// revoke within their rebalance timeout; called by the timer loop.
func (cg *consumerGroup) expire(g *group, now time.Time) {
	removed := false
	for _, m := range cg.members {
		switch {
		case !now.Before(m.deadline):
			g.c.log.Info().Str("group", g.name).Str("member", m.id).Msg("consumer member session expired")
		case m.state == memberUnrevoked && !m.revokeDeadline.IsZero() && !now.Before(m.revokeDeadline):
			g.c.log.Info().Str("group", g.name).Str("member", m.id).Msg("consumer member did not revoke in its rebalance timeout")
		default:
			continue
		}
		cg.remove(m)
		removed = true
	}
	if removed {
		g.consumerMemberRemoved()
		cg.refresh(g, g.c.lastView, true)
	}
}

// nextDeadline is the earliest session or revocation deadline.
func (cg *consumerGroup) nextDeadline() time.Time {
	var next time.Time
	for _, m := range cg.members {
		for _, t := range []time.Time{m.deadline, m.revokeDeadline} {
			if !t.IsZero() && (next.IsZero() || t.Before(next)) {
				next = t
			}
		}
	}
	return next
}

func sortedTopicIDs(a topicPartitions) [][16]byte {
	ids := slices.Collect(maps.Keys(a))
	slices.SortFunc(ids, func(x, y [16]byte) int { return bytes.Compare(x[:], y[:]) })
	return ids
}

func responseAssignment(a topicPartitions) *kmsg.ConsumerGroupHeartbeatResponseAssignment {
	out := kmsg.NewConsumerGroupHeartbeatResponseAssignment()
	out.Topics = []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{}
	for _, t := range sortedTopicIDs(a) {
		at := kmsg.NewConsumerGroupHeartbeatResponseAssignmentTopic()
		at.TopicID = t
		at.Partitions = slices.Clone(a[t])
		out.Topics = append(out.Topics, at)
	}
	return &out
}
