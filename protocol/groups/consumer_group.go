package groups

import (
	"regexp"
	"slices"
	"time"
)

// The consumer group protocol of KIP-848 (ConsumerGroupHeartbeat): the
// coordinator, not a member, computes the assignment. A group has a group
// epoch, bumped whenever what the assignment depends on changes (members,
// subscriptions, the partitions of subscribed topics, the assignor); the
// target assignment of that epoch; and, per member, the assignment it
// holds now. Members move towards the target one heartbeat at a time: a
// partition moves to a new owner only after its old owner revoked it, so
// no partition is ever consumed by two members (CurrentAssignmentBuilder
// in Kafka's group coordinator, reconcile below).

// consumerMemberState is where a member is on its way to the target
// assignment, named as ConsumerGroupDescribe and Kafka's logs name them.
type consumerMemberState int8

const (
	// memberStable: the member holds its target assignment.
	memberStable consumerMemberState = iota
	// memberUnrevoked: the member must revoke partitions before it may
	// move to the new epoch.
	memberUnrevoked
	// memberUnreleased: the member is at the target epoch but some of its
	// target partitions are still held by members that must revoke them.
	memberUnreleased
)

// Member epochs with a meaning of their own in a heartbeat.
const (
	joinEpoch        int32 = 0
	leaveEpoch       int32 = -1
	staticLeaveEpoch int32 = -2
)

// topicPartitions is an assignment: partitions by topic id, each sorted.
type topicPartitions map[[16]byte][]int32

func (a topicPartitions) clone() topicPartitions {
	out := make(topicPartitions, len(a))
	for t, ps := range a {
		out[t] = slices.Clone(ps)
	}
	return out
}

func (a topicPartitions) equal(b topicPartitions) bool {
	if len(a) != len(b) {
		return false
	}
	for t, ps := range a {
		if !slices.Equal(ps, b[t]) {
			return false
		}
	}
	return true
}

func (a topicPartitions) contains(t [16]byte, p int32) bool {
	_, ok := slices.BinarySearch(a[t], p)
	return ok
}

func (a topicPartitions) add(t [16]byte, p int32) {
	ps := a[t]
	if i, ok := slices.BinarySearch(ps, p); !ok {
		a[t] = slices.Insert(ps, i, p)
	}
}

func (a topicPartitions) size() int {
	n := 0
	for _, ps := range a {
		n += len(ps)
	}
	return n
}

// consumerMember is one member of a consumer group.
type consumerMember struct {
	id         string
	instanceID *string
	rackID     *string
	clientID   string
	clientHost string

	epoch     int32
	prevEpoch int32
	state     consumerMemberState

	rebalanceTimeout time.Duration
	subscribedNames  []string
	subscribedRegex  *string
	regex            *regexp.Regexp // compiled subscribedRegex
	assignor         string         // the member's server assignor, "" for the default

	// topicIDs are the subscribed topics' ids, resolved against the view
	// of version resolvedVer (topicView.subscribed).
	topicIDs    [][16]byte
	resolved    bool
	resolvedVer uint64

	assigned topicPartitions // what the member may consume now
	revoking topicPartitions // what it must give up before moving on
	// since is the member epoch each partition of assigned and revoking
	// was assigned at: a commit at an older epoch than the member's is
	// still its own for partitions it held since then (KIP-1251).
	since map[ownedPartition]int32

	// deadline is when the session expires without a heartbeat;
	// revokeDeadline, set while revoking, when the member is removed for
	// not revoking in its rebalance timeout.
	deadline       time.Time
	revokeDeadline time.Time
	// staticLeft: a static member said it will come back (epoch -2); it
	// keeps its assignment until its session expires.
	staticLeft bool
}

// releaseRevoking gives up what m is revoking, as if it had revoked it:
// a static member that left for now consumes nothing.
func (m *consumerMember) releaseRevoking() {
	for t, ps := range m.revoking {
		for _, p := range ps {
			delete(m.since, ownedPartition{t, p})
		}
	}
	m.revoking = nil
	m.revokeDeadline = time.Time{}
	if m.state == memberUnrevoked {
		m.state = memberStable
	}
}

// subscribes reports whether the member subscribes to topic name.
func (m *consumerMember) subscribes(name string) bool {
	if slices.Contains(m.subscribedNames, name) {
		return true
	}
	return m.regex != nil && m.regex.MatchString(name)
}

// consumerGroup is the KIP-848 state of a group whose members use the
// consumer protocol. Guarded by the coordinator's mutex.
type consumerGroup struct {
	epoch           int32 // group epoch
	assignmentEpoch int32 // epoch of target
	target          map[string]topicPartitions
	assignor        string // of the last target computation

	members map[string]*consumerMember
	static  map[string]string // group instance id -> member id

	// topics are the subscribed topics' partition counts the target was
	// computed from: when they change, so does the group epoch.
	topics map[[16]byte]int32
}

func newConsumerGroup() *consumerGroup {
	return &consumerGroup{
		target:  make(map[string]topicPartitions),
		members: make(map[string]*consumerMember),
		static:  make(map[string]string),
		topics:  make(map[[16]byte]int32),
	}
}

// stateName is the group state ListGroups and ConsumerGroupDescribe give,
// as Kafka's ConsumerGroup.ConsumerGroupState names it.
func (cg *consumerGroup) stateName() string {
	switch {
	case len(cg.members) == 0:
		return "Empty"
	case cg.assignmentEpoch != cg.epoch:
		return "Assigning"
	}
	for _, m := range cg.members {
		if m.epoch != cg.assignmentEpoch || m.state != memberStable {
			return "Reconciling"
		}
	}
	return "Stable"
}

// owners maps each partition held (assigned or being revoked) to its
// member, except the partitions of except.
func (cg *consumerGroup) owners(except string) map[ownedPartition]string {
	out := make(map[ownedPartition]string)
	for id, m := range cg.members {
		if id == except {
			continue
		}
		for t, ps := range m.assigned {
			for _, p := range ps {
				out[ownedPartition{t, p}] = id
			}
		}
		for t, ps := range m.revoking {
			for _, p := range ps {
				out[ownedPartition{t, p}] = id
			}
		}
	}
	return out
}

type ownedPartition struct {
	topic     [16]byte
	partition int32
}

// reconcile moves m one step towards its target assignment, as Kafka's
// CurrentAssignmentBuilder: owned is what the member says it holds (nil
// when it did not say). It reports whether m's assignment changed.
func (cg *consumerGroup) reconcile(m *consumerMember, owned topicPartitions, now time.Time) bool {
	switch m.state {
	case memberUnrevoked:
		if owned == nil || ownsAny(owned, m.revoking) {
			return false // still revoking
		}
		// Revoked: the member may move on to the target epoch.
		m.releaseRevoking()
		cg.nextAssignment(m, owned, now)
		return true
	case memberUnreleased:
		return cg.nextAssignment(m, owned, now)
	default:
		if m.epoch == cg.assignmentEpoch {
			return false
		}
		return cg.nextAssignment(m, owned, now)
	}
}

// ownsAny reports whether owned holds any partition of a.
func ownsAny(owned, a topicPartitions) bool {
	for t, ps := range a {
		for _, p := range ps {
			if owned.contains(t, p) {
				return true
			}
		}
	}
	return false
}

// nextAssignment computes m's next assignment towards the target of the
// assignment epoch: the partitions it keeps, those it must revoke first,
// and the new ones no other member holds any more. Partitions to revoke
// that the member says it no longer owns (owned, nil when it did not say)
// need no revocation round, as Kafka's ownsRevokedPartitions decides: a
// static member back after a restart owns nothing.
func (cg *consumerGroup) nextAssignment(m *consumerMember, owned topicPartitions, now time.Time) bool {
	target := cg.target[m.id]
	owners := cg.owners(m.id)
	keep := make(topicPartitions)
	revoke := make(topicPartitions)
	unreleased := false
	for t, ps := range m.assigned {
		for _, p := range ps {
			if target.contains(t, p) {
				keep.add(t, p)
			} else {
				revoke.add(t, p)
			}
		}
	}
	if revoke.size() > 0 && (owned == nil || ownsAny(owned, revoke)) {
		// Revoke first, at the current epoch, holding only what it keeps
		// (since still covers the revoked ones: they are the member's
		// until it says it gave them up, and it commits them first).
		changed := !keep.equal(m.assigned)
		m.assigned, m.revoking = keep, revoke
		m.state = memberUnrevoked
		m.revokeDeadline = now.Add(m.rebalanceTimeout)
		return changed
	}
	next := keep.clone()
	for t, ps := range target {
		for _, p := range ps {
			if keep.contains(t, p) {
				continue
			}
			if _, held := owners[ownedPartition{t, p}]; held {
				unreleased = true
				continue
			}
			next.add(t, p)
		}
	}
	changed := !next.equal(m.assigned) || m.epoch != cg.assignmentEpoch
	if m.epoch != cg.assignmentEpoch {
		m.prevEpoch = m.epoch
		m.epoch = cg.assignmentEpoch
	}
	since := make(map[ownedPartition]int32, next.size())
	for t, ps := range next {
		for _, p := range ps {
			tp := ownedPartition{t, p}
			if e, ok := m.since[tp]; ok && m.assigned.contains(t, p) {
				since[tp] = e
			} else {
				since[tp] = m.epoch
			}
		}
	}
	m.since = since
	m.assigned = next
	m.revoking = nil
	m.state = memberStable
	if unreleased {
		m.state = memberUnreleased
	}
	return changed
}
