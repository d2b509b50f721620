package groups

import (
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// memberChanged reacts to a member joining, leaving or expiring: a stable
// group starts a rebalance, one already rebalancing may now be complete.
func (g *group) memberChanged(reason string) {
	switch g.state {
	case statePreparingRebalance:
		g.tryCompleteJoin()
	case stateEmpty:
		if len(g.members) > 0 {
			g.prepareRebalance(reason)
		}
	default:
		g.prepareRebalance(reason)
	}
}

// prepareRebalance moves the group to PreparingRebalance: every member
// must rejoin (they learn of it from Heartbeat, SyncGroup or OffsetCommit
// answering REBALANCE_IN_PROGRESS) within the rebalance timeout.
func (g *group) prepareRebalance(reason string) {
	if g.state == stateCompletingRebalance {
		// The assignment the leader was about to send is for a
		// generation that will not be; followers waiting for it must
		// rejoin.
		for _, m := range g.members {
			m.assignment = nil
			if m.syncWait != nil {
				g.sendSync(m, syncError(m.syncVersion, kerr.RebalanceInProgress.Code))
			}
		}
	}
	g.pendingSync = nil
	g.syncDeadline = time.Time{}

	now := time.Now()
	wait := g.maxRebalanceTimeout()
	g.initialDelay = false
	if g.state == stateEmpty && g.c.opts.InitialRebalanceDelay > 0 {
		wait = min(wait, g.c.opts.InitialRebalanceDelay)
		g.initialDelay = true
	}
	g.state = statePreparingRebalance
	g.joinDeadline = now.Add(wait)
	g.c.schedule(g.joinDeadline)
	g.c.log.Info().Str("group", g.name).Int32("generation", g.generation).
		Int("members", len(g.members)).Str("reason", reason).Msg("preparing rebalance")
	g.tryCompleteJoin()
}

// tryCompleteJoin ends the join phase as soon as every member (and every
// member id handed out with MEMBER_ID_REQUIRED) has joined.
func (g *group) tryCompleteJoin() {
	if g.state != statePreparingRebalance || g.initialDelay {
		return
	}
	for _, m := range g.members {
		if m.joinWait == nil {
			return
		}
	}
	if len(g.pending) > 0 {
		return
	}
	g.completeJoin()
}

// completeJoin starts the next generation with the members that rejoined
// and answers their JoinGroup; the leader gets everyone's metadata and
// must send the assignment with SyncGroup.
func (g *group) completeJoin() {
	now := time.Now()
	g.joinDeadline = time.Time{}
	g.initialDelay = false
	// Dynamic members that did not rejoin in time are gone. Static members
	// stay (KIP-345: a restarting static member must not cause a second
	// rebalance); their session timeout removes them if they never return.
	for _, m := range g.members {
		if m.joinWait == nil && m.instanceID == nil {
			g.c.log.Debug().Str("group", g.name).Str("member", m.id).Msg("member did not rejoin in time")
			g.removeMember(m, kerr.UnknownMemberID.Code)
		}
	}

	g.generation++
	if g.generation < 0 { // int32 wrap after two billion rebalances
		g.generation = 1
	}
	g.pendingSync = nil
	g.syncDeadline = time.Time{}

	if len(g.members) == 0 {
		g.state = stateEmpty
		g.protocol = ""
		g.leader = ""
		g.c.log.Info().Str("group", g.name).Int32("generation", g.generation).Msg("group is empty")
		return
	}

	protocol, ok := g.selectProtocol()
	if !ok {
		// Joins are checked against the members' protocols, so this means
		// a bug; refuse the generation rather than hand out a bad one.
		g.c.log.Error().Str("group", g.name).Msg("no protocol common to all members")
		for _, m := range g.members {
			g.removeMember(m, kerr.InconsistentGroupProtocol.Code)
		}
		g.state = stateEmpty
		g.protocol = ""
		return
	}
	g.protocol = protocol

	if l := g.members[g.leader]; l == nil || l.joinWait == nil {
		g.leader = ""
		for _, id := range g.sortedMemberIDs() {
			if g.members[id].joinWait != nil {
				g.leader = id
				break
			}
		}
	}

	g.state = stateCompletingRebalance
	g.pendingSync = make(map[string]struct{}, len(g.members))
	for id := range g.members {
		g.pendingSync[id] = struct{}{}
	}
	g.syncDeadline = now.Add(g.maxRebalanceTimeout())
	g.c.schedule(g.syncDeadline)

	for _, m := range g.members {
		m.assignment = nil
		if m.joinWait != nil {
			m.heartbeat(now)
			g.sendJoin(m, g.joinResponse(m.joinVersion, m))
		}
	}
	g.c.log.Info().Str("group", g.name).Int32("generation", g.generation).
		Str("protocol", g.protocol).Str("leader", g.leader).Int("members", len(g.members)).
		Msg("rebalance joined; awaiting assignment")
}

// expire applies the deadlines that have passed at now.
func (g *group) expire(now time.Time) {
	if g.consumer != nil {
		g.consumer.expire(g, now)
		return
	}
	pendingLapsed := g.expirePending(now)

	expired := false
	for _, m := range g.members {
		if !m.awaiting() && !now.Before(m.deadline) {
			g.c.log.Info().Str("group", g.name).Str("member", m.id).Msg("member session expired")
			g.removeMember(m, kerr.UnknownMemberID.Code)
			expired = true
		}
	}
	switch {
	case expired:
		g.memberChanged("member session expired")
	case pendingLapsed:
		g.tryCompleteJoin()
	}

	switch g.state {
	case statePreparingRebalance:
		if !g.joinDeadline.IsZero() && !now.Before(g.joinDeadline) {
			g.completeJoin()
		}
	case stateCompletingRebalance, stateStable:
		if len(g.pendingSync) > 0 && !g.syncDeadline.IsZero() && !now.Before(g.syncDeadline) {
			for id := range g.pendingSync {
				if m := g.members[id]; m != nil {
					g.c.log.Info().Str("group", g.name).Str("member", id).Msg("member did not sync in time")
					g.removeMember(m, kerr.UnknownMemberID.Code)
				}
			}
			g.pendingSync = nil
			g.syncDeadline = time.Time{}
			g.prepareRebalance("members did not sync in time")
		}
	}
}

// nextDeadline is the earliest time at which expire has work to do, or
// zero.
func (g *group) nextDeadline() time.Time {
	if g.consumer != nil {
		return g.consumer.nextDeadline()
	}
	var next time.Time
	consider := func(t time.Time) {
		if !t.IsZero() && (next.IsZero() || t.Before(next)) {
			next = t
		}
	}
	for _, p := range g.pending {
		consider(p.until)
	}
	for _, m := range g.members {
		if !m.awaiting() {
			consider(m.deadline)
		}
	}
	switch g.state {
	case statePreparingRebalance:
		consider(g.joinDeadline)
	case stateCompletingRebalance, stateStable:
		if len(g.pendingSync) > 0 {
			consider(g.syncDeadline)
		}
	}
	return next
}
