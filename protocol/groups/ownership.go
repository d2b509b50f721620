package groups

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/lakegw/lakegw/cluster"
)

// Ownership: when gateways share a state store, each coordinates the
// groups of its shards (cluster/), and a shard moves when the live
// gateways change. The new coordinator first claims the shard in the
// store, which fences the old one's writes (ShardClaimer), then loads the
// shard's committed offsets, which the old one saved before answering
// each commit; members rejoin, as with a Kafka coordinator failover. A
// lone gateway's coordinator owns every group and never reloads.

// Shards is a set of group shards (cluster.Shard).
type Shards [cluster.GroupShards]bool

// ShardClaimer is a store that fences the writes of committed offsets by
// shard: once ClaimShards returned, no write of the shards' previous
// owner can land any more, and this gateway's writes of groups in shards
// it did not claim (or that another claimed since) fail with
// ErrShardNotOwned. The PostgreSQL state store of a cluster is one.
type ShardClaimer interface {
	ClaimShards(ctx context.Context, shards []int32) error
}

// ErrShardNotOwned: another gateway coordinates the group now.
var ErrShardNotOwned = errors.New("another gateway coordinates this group now")

// storeFailureCode is the error code of a store write that failed:
// NOT_COORDINATOR when another gateway took the group over (the client
// finds it), else COORDINATOR_NOT_AVAILABLE (retriable).
func storeFailureCode(err error) int16 {
	if errors.Is(err, ErrShardNotOwned) {
		return kerr.NotCoordinator.Code
	}
	return kerr.CoordinatorNotAvailable.Code
}

// ownership is which shards this coordinator answers for, and which of
// those it is still taking over, each not before its notBefore (the
// grace it was gained with, kept across newer ownerships until taken).
type ownership struct {
	owned, loading Shards
	notBefore      [cluster.GroupShards]time.Time
}

// ownershipState is the coordinator's current ownership (nil: every
// group) and the newest one waiting to be taken over.
type ownershipState struct {
	mu   sync.Mutex // orders SetOwnership against a takeover's finish
	cur  atomic.Pointer[ownership]
	next chan takeover // 1-slot: the newest ownership not taken over yet
}

type takeover struct {
	own *ownership
}

// SetOwnership makes the coordinator answer only for the groups of owned,
// from now on. Groups it loses are dropped at once (their members are told
// NOT_COORDINATOR and find the new coordinator). Groups it gains answer
// COORDINATOR_LOAD_IN_PROGRESS until it has waited grace (time for their
// previous coordinator, still alive, to learn it lost them), claimed their
// shards and loaded their offsets. It does not block: the takeover runs on
// the coordinator's own goroutine, retried until it succeeds or a newer
// ownership replaces it. The first ownership gains every shard it names.
func (c *Coordinator) SetOwnership(owned Shards, grace time.Duration) {
	c.own.mu.Lock()
	prev := c.own.cur.Load()
	o := &ownership{owned: owned}
	notBefore := time.Now().Add(grace)
	for s := range owned {
		// A shard still loading was never served: it is gained again,
		// and keeps the grace it was first gained with.
		held := prev != nil && prev.owned[s] && !prev.loading[s]
		o.loading[s] = owned[s] && !held
		if o.loading[s] {
			o.notBefore[s] = notBefore
			if prev != nil && prev.loading[s] && prev.notBefore[s].After(notBefore) {
				o.notBefore[s] = prev.notBefore[s]
			}
		}
	}
	c.own.cur.Store(o)
	c.dropLost(owned)
	c.own.mu.Unlock()
	t := takeover{own: o}
	for {
		select {
		case c.own.next <- t:
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
	if o == nil {
		return 0
	}
	switch s := cluster.Shard(group); {
	case !o.owned[s]:
		return kerr.NotCoordinator.Code
	case o.loading[s]:
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

// dropLost forgets the members and offsets of the groups outside owned.
// Called with own.mu held.
func (c *Coordinator) dropLost(owned Shards) {
	lost := func(group string) bool { return !owned[cluster.Shard(group)] }
	c.mu.Lock()
	for name, g := range c.groups {
		if !lost(name) {
			continue
		}
		g.failWaiters(kerr.NotCoordinator.Code)
		for id := range g.pending {
			g.takePending(id)
		}
		delete(c.groups, name)
	}
	c.mu.Unlock()
	c.offsets.dropIf(lost)
}

// runOwnership takes over the shards each new ownership gains.
func (c *Coordinator) runOwnership() {
	defer close(c.ownershipDone)
	for {
		var t takeover
		select {
		case <-c.quit:
			return
		case t = <-c.own.next:
		}
		if !c.sleep(time.Until(t.own.waitUntil())) {
			return
		}
		for backoff := 100 * time.Millisecond; ; backoff = min(2*backoff, 5*time.Second) {
			err := c.takeOver(t.own)
			if err == nil {
				break
			}
			c.log.Warn().Err(err).Dur("retry_in", backoff).Msg("taking over the groups of shards this gateway now coordinates")
			if !c.sleep(backoff) {
				return
			}
		}
	}
}

// waitUntil is when every shard o gains may be taken over.
func (o *ownership) waitUntil() time.Time {
	var t time.Time
	for s, l := range o.loading {
		if l && o.notBefore[s].After(t) {
			t = o.notBefore[s]
		}
	}
	return t
}

// sleep waits d, or until the coordinator closes (false). A newer ownership
// arriving meanwhile does not cut it short: the grace must pass whatever
// follows (the newer one keeps the shards' notBefore anyway).
func (c *Coordinator) sleep(d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-c.quit:
		return false
	case <-t.C:
	}
	return true
}

// takeOver claims and loads the shards o gains, unless o is no longer the
// current ownership (a newer one is queued, and takes over its own).
func (c *Coordinator) takeOver(o *ownership) error {
	if c.own.cur.Load() != o {
		return nil
	}
	var gained []int32
	for s, l := range o.loading {
		if l {
			gained = append(gained, int32(s))
		}
	}
	var offs []CommittedOffset
	if len(gained) > 0 && c.store != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if claimer, ok := c.store.(ShardClaimer); ok {
			if err := claimer.ClaimShards(ctx, gained); err != nil {
				return err
			}
		}
		all, err := c.store.LoadOffsets(ctx)
		if err != nil {
			return err
		}
		for _, off := range all {
			if o.loading[cluster.Shard(off.Group)] {
				offs = append(offs, off)
			}
		}
	}
	c.own.mu.Lock()
	defer c.own.mu.Unlock()
	if c.own.cur.Load() != o {
		return nil // superseded meanwhile: what was loaded may be lost already
	}
	c.offsets.replaceGroups(func(group string) bool { return o.loading[cluster.Shard(group)] }, offs)
	c.own.cur.Store(&ownership{owned: o.owned}) // notBefore: nothing is loading
	c.log.Info().Int("shards", len(gained)).Int("offsets", len(offs)).Msg("took over groups")
	return nil
}
