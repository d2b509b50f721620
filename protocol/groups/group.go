package groups

import (
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// groupState is the classic group state machine of Kafka's coordinator.
type groupState int8

const (
	stateEmpty groupState = iota
	statePreparingRebalance
	stateCompletingRebalance
	stateStable
	// stateDead is never a group's state here (groups are not deleted
	// while in use); it is what DescribeGroups says of unknown groups.
	stateDead
)

func (s groupState) String() string {
	switch s {
	case stateEmpty:
		return "Empty"
	case statePreparingRebalance:
		return "PreparingRebalance"
	case stateCompletingRebalance:
		return "CompletingRebalance"
	case stateStable:
		return "Stable"
	case stateDead:
		return "Dead"
	}
	return "Unknown"
}

// group is the membership state of one consumer group. Every field is
// guarded by the coordinator's mutex.
type group struct {
	c    *Coordinator
	name string

	state        groupState
	generation   int32
	protocolType string // set by the first member, kept while Empty as Kafka does
	protocol     string // selected for the current generation
	leader       string

	members map[string]*member
	static  map[string]string // group instance id -> member id

	// pending holds member ids handed out with MEMBER_ID_REQUIRED (JoinGroup
	// v4+) that have not joined with them yet (pending.go).
	pending map[string]pendingMember

	// joinDeadline ends PreparingRebalance even if not every member
	// rejoined; initialDelay is set while it is the initial rebalance delay
	// of a group that was empty, which must not end early.
	joinDeadline time.Time
	initialDelay bool

	// pendingSync holds the members of this generation that have not sent
	// SyncGroup yet; at syncDeadline they are removed (as Kafka does) so a
	// member that vanished between join and sync cannot stall the group.
	pendingSync  map[string]struct{}
	syncDeadline time.Time

	// consumer is set while the group uses the consumer protocol
	// (KIP-848, consumer_group.go); the classic fields above are then
	// unused.
	consumer *consumerGroup
}

func newGroup(c *Coordinator, name string) *group {
	return &group{
		c:       c,
		name:    name,
		members: make(map[string]*member),
		static:  make(map[string]string),
		pending: make(map[string]pendingMember),
	}
}

// empty reports whether the group has no members, joined or about to
// join: only then may its committed offsets expire.
func (g *group) empty() bool {
	return len(g.members) == 0 && len(g.pending) == 0 && (g.consumer == nil || len(g.consumer.members) == 0)
}

// stateName is the group's state as ListGroups and DescribeGroups name it.
func (g *group) stateName() string {
	if g.consumer != nil {
		return g.consumer.stateName()
	}
	return g.state.String()
}

// groupTypeName is the group's type as ListGroups v5 gives it.
func (g *group) groupTypeName() string {
	if g.consumer != nil {
		return groupTypeConsumer
	}
	return groupTypeClassic
}

// forgettable reports whether the group holds nothing worth keeping.
func (g *group) forgettable() bool {
	return g.state == stateEmpty && g.empty() && !g.c.offsets.hasGroup(g.name)
}

// validateMember checks a request's member id and group instance id
// against the group, as Kafka's validateCurrentMember: a static member
// whose id was replaced by a newer join is fenced.
func (g *group) validateMember(memberID string, instanceID *string) (*member, int16) {
	if instanceID != nil {
		if cur, ok := g.static[*instanceID]; ok && cur != memberID {
			return nil, kerr.FencedInstanceID.Code
		}
	}
	m := g.members[memberID]
	if m == nil {
		return nil, kerr.UnknownMemberID.Code
	}
	return m, 0
}

// supportsProtocols reports whether a member with these protocols may be
// in the group: same protocol type, and at least one protocol that every
// other member also supports. except is the member itself when it rejoins.
func (g *group) supportsProtocols(protocolType string, ps []kmsg.JoinGroupRequestProtocol, except string) bool {
	if protocolType == "" || len(ps) == 0 {
		return false
	}
	others := 0
	counts := make(map[string]int)
	for id, m := range g.members {
		if id == except {
			continue
		}
		if m.protocolType != protocolType {
			return false
		}
		others++
		for _, p := range m.protocols {
			counts[p.Name]++
		}
	}
	if others == 0 {
		return true
	}
	for _, p := range ps {
		if counts[p.Name] == others {
			return true
		}
	}
	return false
}

// selectProtocol picks the protocol of the next generation as Kafka does:
// among the protocols every member supports, each member votes for the
// first in its own preference order and the most votes win (ties by name,
// to be deterministic).
func (g *group) selectProtocol() (string, bool) {
	counts := make(map[string]int)
	for _, m := range g.members {
		seen := make(map[string]bool, len(m.protocols))
		for _, p := range m.protocols {
			if !seen[p.Name] {
				seen[p.Name] = true
				counts[p.Name]++
			}
		}
	}
	votes := make(map[string]int)
	for _, m := range g.members {
		for _, p := range m.protocols {
			if counts[p.Name] == len(g.members) {
				votes[p.Name]++
				break
			}
		}
	}
	best, bestVotes := "", 0
	for name, v := range votes {
		if v > bestVotes || (v == bestVotes && name < best) {
			best, bestVotes = name, v
		}
	}
	return best, bestVotes > 0
}

// maxRebalanceTimeout is how long a rebalance waits for members to
// rejoin: the longest rebalance timeout any member asked for.
func (g *group) maxRebalanceTimeout() time.Duration {
	var d time.Duration
	for _, m := range g.members {
		d = max(d, m.rebalanceTimeout)
	}
	return d
}

// removeMember drops m from the group, answering its blocked requests
// with code. It does not start a rebalance; callers do.
func (g *group) removeMember(m *member, code int16) {
	g.failMember(m, code)
	delete(g.members, m.id)
	if m.instanceID != nil && g.static[*m.instanceID] == m.id {
		delete(g.static, *m.instanceID)
	}
	delete(g.pendingSync, m.id)
	if g.leader == m.id {
		g.leader = ""
	}
	if len(g.members) == 0 {
		// Offset retention counts from when the group emptied.
		g.c.offsets.touch(g.name, g.c.opts.Now())
	}
}

// failMember answers m's blocked JoinGroup and SyncGroup with code.
func (g *group) failMember(m *member, code int16) {
	if m.joinWait != nil {
		g.sendJoin(m, joinError(m.joinVersion, m.id, code))
	}
	if m.syncWait != nil {
		g.sendSync(m, syncError(m.syncVersion, code))
	}
}

// failWaiters answers every blocked request of the group with code.
func (g *group) failWaiters(code int16) {
	for _, m := range g.members {
		g.failMember(m, code)
	}
}

// sendJoin delivers the response of m's blocked JoinGroup. The channel has
// one slot and only this function sends on it, so it never blocks.
func (g *group) sendJoin(m *member, resp *kmsg.JoinGroupResponse) {
	m.joinWait <- resp
	m.joinWait = nil
}

// sendSync delivers the response of m's blocked SyncGroup.
func (g *group) sendSync(m *member, resp *kmsg.SyncGroupResponse) {
	m.syncWait <- resp
	m.syncWait = nil
}

// joinResponse is the successful JoinGroup answer for m in the current
// generation; the leader also gets every member's metadata.
func (g *group) joinResponse(version int16, m *member) *kmsg.JoinGroupResponse {
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.Version = version
	resp.Generation = g.generation
	resp.ProtocolType = kmsg.StringPtr(g.protocolType)
	resp.Protocol = kmsg.StringPtr(g.protocol)
	resp.LeaderID = g.leader
	resp.MemberID = m.id
	if m.id == g.leader {
		for _, id := range g.sortedMemberIDs() {
			o := g.members[id]
			jm := kmsg.NewJoinGroupResponseMember()
			jm.MemberID = o.id
			jm.InstanceID = o.instanceID
			jm.ProtocolMetadata = o.metadata(g.protocol)
			resp.Members = append(resp.Members, jm)
		}
	}
	return resp
}

// joinError is a failed JoinGroup answer.
func joinError(version int16, memberID string, code int16) *kmsg.JoinGroupResponse {
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.Version = version
	resp.ErrorCode = code
	resp.Generation = -1
	resp.MemberID = memberID
	resp.Protocol = kmsg.StringPtr("")
	return resp
}

// syncError is a failed SyncGroup answer.
func syncError(version int16, code int16) *kmsg.SyncGroupResponse {
	resp := kmsg.NewPtrSyncGroupResponse()
	resp.Version = version
	resp.ErrorCode = code
	return resp
}

// syncResponse is the successful SyncGroup answer for m.
func (g *group) syncResponse(version int16, m *member) *kmsg.SyncGroupResponse {
	resp := kmsg.NewPtrSyncGroupResponse()
	resp.Version = version
	resp.ProtocolType = kmsg.StringPtr(g.protocolType)
	resp.Protocol = kmsg.StringPtr(g.protocol)
	resp.MemberAssignment = m.assignment
	return resp
}

func (g *group) sortedMemberIDs() []string {
	ids := make([]string, 0, len(g.members))
	for id := range g.members {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids
}
