package groups

import "time"

// A pending member id was handed out with MEMBER_ID_REQUIRED (JoinGroup
// v4+, KIP-394) and has not joined with it yet. Kafka keeps it for the
// session timeout the client asked for, up to 30 minutes; a well-behaved
// client joins again at once, so here it also lapses after
// Options.PendingMemberTimeout, and each client host may hold at most
// Options.MaxPendingPerClient of them: a client that asks for ids and
// never uses them cannot grow the coordinator.
type pendingMember struct {
	until time.Time
	host  string
}

// pendingFull reports whether host already holds as many pending member
// ids as it may. Called with c.mu held.
func (c *Coordinator) pendingFull(host string) bool {
	return atLimit(c.pendingByHost[host], c.opts.MaxPendingPerClient)
}

// addPending hands out id as a pending member id of g that lapses at the
// earlier of the session timeout and PendingMemberTimeout. Called with
// c.mu held.
func (g *group) addPending(id, host string, now time.Time, session time.Duration) {
	until := now.Add(min(session, g.c.opts.PendingMemberTimeout))
	g.pending[id] = pendingMember{until: until, host: host}
	g.c.pendingByHost[host]++
	g.c.schedule(until)
}

// takePending removes id from the pending member ids and reports whether
// it was one. Called with c.mu held.
func (g *group) takePending(id string) bool {
	p, ok := g.pending[id]
	if !ok {
		return false
	}
	delete(g.pending, id)
	if n := g.c.pendingByHost[p.host] - 1; n > 0 {
		g.c.pendingByHost[p.host] = n
	} else {
		delete(g.c.pendingByHost, p.host)
	}
	return true
}

// expirePending drops the pending member ids that lapsed at now and
// reports whether any did. Called with c.mu held.
func (g *group) expirePending(now time.Time) bool {
	lapsed := false
	for id, p := range g.pending {
		if !now.Before(p.until) {
			g.takePending(id)
			lapsed = true
		}
	}
	return lapsed
}
