package groups

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Ownership: when gateways share a state store, each coordinates the
// groups of its shards (cluster/), and a group moves when the live
// gateways change. The new coordinator takes the group's committed offsets
// from the store, where the old one saved every commit before answering
// it; members rejoin, as with a Kafka coordinator failover. A lone
// gateway's coordinator owns every group and never reloads.

// ownership is which groups this coordinator answers for, and which of
// those it is still loading.
type ownership struct {
	owns    func(group string) bool
	loading func(group string) bool // nil: none
}

// ownershipState is the coordinator's current ownership (nil: every
// group) and the newest one waiting to be adopted.
type ownershipState struct {
	cur  atomic.Pointer[ownership]
	next chan func(string) bool // 1-slot: the newest ownership not adopted yet
}

// SetOwnership makes the coordinator answer only for the groups owns
// reports, from now on; groups it gains answer COORDINATOR_LOAD_IN_PROGRESS
// until their offsets are loaded from the store, and groups it loses are
// dropped (their members are told NOT_COORDINATOR and find the new
// coordinator). It does not block: the loading runs on the coordinator's
// own goroutine, retried until it succeeds or a newer ownership replaces
// it.
func (c *Coordinator) SetOwnership(owns func(group string) bool) {
	prev := c.own.cur.Load()
	was := func(string) bool { return true }
	if prev != nil {
		was = prev.owns
		if prev.loading != nil {
			// Groups still loading were never served: load them again.
			was = func(g string) bool { return prev.owns(g) && !prev.loading(g) }
		}
	}
	c.own.cur.Store(&ownership{owns: owns, loading: func(g string) bool { return owns(g) && !was(g) }})
	c.dropLost(owns)
	for {
		select {
		case c.own.next <- owns:
			return
		default:
		}
		select { // replace the older one waiting
		case <-c.own.next:
		default:
		}
	}
}

// ownershipCode is the error a request about group gets while this
// coordinator does not (yet) answer for it, or 0.
func (c *Coordinator) ownershipCode(group string) int16 {
	o := c.own.cur.Load()
	switch {
	case o == nil:
		return 0
	case !o.owns(group):
		return kerr.NotCoordinator.Code
	case o.loading != nil && o.loading(group):
		return kerr.CoordinatorLoadInProgress.Code
	}
	return 0
}

// groupCode is statusCode for a request about one group.
func (c *Coordinator) groupCode(group string) int16 {
	if code := c.statusCode(); code != 0 {
		return code
	}
	return c.ownershipCode(group)
}

// dropLost forgets the members and offsets of the groups owns does not
// hold.
func (c *Coordinator) dropLost(owns func(string) bool) {
	c.mu.Lock()
	for name, g := range c.groups {
		if owns(name) {
			continue
		}
		g.failWaiters(kerr.NotCoordinator.Code)
		for id := range g.pending {
			g.takePending(id)
		}
		delete(c.groups, name)
	}
	c.mu.Unlock()
	c.offsets.dropIf(func(group string) bool { return !owns(group) })
}

// runOwnership adopts ownerships as SetOwnership hands them over: it loads
// the committed offsets of the groups gained, then lets them be served.
func (c *Coordinator) runOwnership() {
	defer close(c.ownershipDone)
	for {
		var owns func(string) bool
		select {
		case <-c.quit:
			return
		case owns = <-c.own.next:
		}
		for backoff := 100 * time.Millisecond; ; backoff = min(2*backoff, 5*time.Second) {
			done, err := c.loadGained(owns)
			if done {
				break
			}
			c.log.Warn().Err(err).Dur("retry_in", backoff).Msg("loading the committed offsets of groups this gateway took over")
			select {
			case <-c.quit:
				return
			case <-time.After(backoff):
			}
		}
	}
}

// loadGained loads the offsets of the groups owns gained, unless a newer
// ownership arrived (done either way, then).
func (c *Coordinator) loadGained(owns func(string) bool) (done bool, err error) {
	o := c.own.cur.Load()
	if o == nil || len(c.own.next) > 0 {
		return true, nil // superseded
	}
	if o.loading != nil && c.store != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		offs, err := c.store.LoadOffsets(ctx)
		if err != nil {
			return false, err
		}
		var gained []CommittedOffset
		for _, off := range offs {
			if o.loading(off.Group) {
				gained = append(gained, off)
			}
		}
		c.offsets.replaceGroups(o.loading, gained)
		c.log.Info().Int("offsets", len(gained)).Msg("took over groups")
	}
	// Serve them, unless the ownership changed meanwhile (that one loads).
	c.own.cur.CompareAndSwap(o, &ownership{owns: o.owns})
	return true, nil
}
