package derive

import (
	"context"
	"sync"

	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// PlanCache keeps the live-file plans of recently planned snapshots, so that
// deriving snapshots in order (the topics watcher, a consumer reading
// forward) plans each snapshot once, from its parent's plan and its own
// manifests, instead of re-reading every manifest of the table twice per
// snapshot. It is bounded both in plans and in the data files they hold
// (a plan counts as its live file count), safe for concurrent use, and never
// serves a stale plan: a snapshot's plan is immutable, and the key is the
// table UUID, the snapshot id and the schema the plan was made with. A nil
// *PlanCache caches nothing.
type PlanCache struct {
	mu       sync.Mutex
	plans    *simplelru.LRU[planKey, livePlan]
	files    int
	maxFiles int
	hits     int64
	misses   int64
	// inflight holds the plans being made, so that concurrent
	// derivations wait for one another's plans rather than each plan the
	// table; bounded by the derivations running.
	inflight map[planKey]*planCall
	// fullPlans counts the runs of iceberg-go's planner; extended the
	// plans derived from a parent's instead.
	fullPlans, extended int64
	// last is the plan cached last, whose slim files a new run of the
	// planner reuses (planFiles): a cache holds the plans of one table.
	last livePlan
}

// planCall is a plan being made; done is closed when plan and err are set.
type planCall struct {
	done chan struct{}
	plan livePlan
	err  error
}

type planKey struct {
	table    uuid.UUID
	snapshot int64
	schema   int
}

// NewPlanCache returns a cache of at most maxPlans plans holding at most
// maxFiles live data files in all (a larger plan is not cached). Deriving
// in order needs only the previous snapshot's plan; a few more serve
// consumers reading other snapshots at the same time.
func NewPlanCache(maxPlans, maxFiles int) *PlanCache {
	c := &PlanCache{maxFiles: max(maxFiles, 1), inflight: map[planKey]*planCall{}}
	plans, err := simplelru.NewLRU(max(maxPlans, 1), func(_ planKey, p livePlan) { c.files -= len(p) })
	if err != nil {
		panic(err) // only for a non-positive size
	}
	c.plans = plans
	return c
}

// Stats returns the number of plan look-ups served from the cache and the
// number that were not.
func (c *PlanCache) Stats() (hits, misses int64) {
	if c == nil {
		return 0, 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits, c.misses
}

// planKeyFor is the cache key of the plan of snapshot s of tbl. The schema
// is the one iceberg-go plans with (the snapshot's, else the current one):
// it decides equality-delete pruning by column statistics.
func planKeyFor(tbl *table.Table, s *table.Snapshot) planKey {
	meta := tbl.Metadata()
	schema := meta.CurrentSchema().ID
	if s.SchemaID != nil {
		schema = *s.SchemaID
	}
	return planKey{table: meta.TableUUID(), snapshot: s.SnapshotID, schema: schema}
}

func (c *PlanCache) get(k planKey) (livePlan, bool) {
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	p, ok := c.plans.Get(k)
	if ok {
		c.hits++
	} else {
		c.misses++
	}
	return p, ok
}

// put caches plan p, which must not be modified afterwards (the derivation
// only reads plans; extendPlan copies what it changes).
func (c *PlanCache) put(k planKey, p livePlan) {
	if c == nil || len(p) > c.maxFiles {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.plans.Contains(k) {
		return
	}
	c.plans.Add(k, p)
	c.last = p
	c.files += len(p)
	for c.files > c.maxFiles && c.plans.Len() > 1 {
		c.plans.RemoveOldest()
	}
}

// has reports whether plan k is cached, without counting a look-up or
// refreshing its recency.
func (c *PlanCache) has(k planKey) bool {
	if c == nil {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.plans.Contains(k)
}

// FullPlans returns how many times iceberg-go's planner planned a whole
// snapshot for this cache's derivations (every other plan was extended from
// a parent's through one snapshot's delta).
func (c *PlanCache) FullPlans() int64 {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fullPlans
}

// planFiles runs iceberg-go's planner on snapshot s, counting the run.
// countExtended counts a plan derived from its parent's.
func (c *PlanCache) countExtended() {
	if c != nil {
		c.mu.Lock()
		c.extended++
		c.mu.Unlock()
	}
}

// extendedCount is the number of plans derived from a parent's.
func (c *PlanCache) extendedCount() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.extended
}

func (c *PlanCache) planFiles(ctx context.Context, tbl *table.Table, s *table.Snapshot) (livePlan, error) {
	var donor livePlan
	if c != nil {
		c.mu.Lock()
		c.fullPlans++
		donor = c.last
		c.mu.Unlock()
	}
	return planFiles(ctx, tbl, s, donor)
}

// coldPlanClaim is how many snapshots a derivation claims when no
// ancestor's plan is at hand: at least as many as fetch derives at once
// (its read-ahead workers and the consumers), so that they all wait for
// one run of the planner.
const coldPlanClaim = 16

// planClaim is a chain of snapshots whose plans one derivation has
// claimed to make: chain[0] is the snapshot asked for, each next one its
// parent, back to (excluding) base, whose plan is cached or being made;
// base is nil when the chain reaches the first snapshot (fromEmpty) or
// when nothing can be extended (then the planner plans the oldest of
// chain).
type planClaim struct {
	chain     []*table.Snapshot
	keys      []planKey
	calls     []*planCall
	base      *table.Snapshot
	fromEmpty bool
}

// claimChain returns the cached plan of s, or the call making it, or else
// claims the plans of s and of its ancestors back to the nearest one whose
// plan is cached or being made (at most maxPlanSteps). The walk and the
// claim happen under one lock: of concurrent derivations of consecutive
// snapshots, the first claims, and the others extend from its plans or
// wait for them, rather than each plan the table.
func (c *PlanCache) claimChain(tbl *table.Table, s *table.Snapshot) (livePlan, *planCall, *planClaim) {
	meta := tbl.Metadata()
	key := planKeyFor(tbl, s)
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.plans.Get(key); ok {
		c.hits++
		return p, nil, nil
	}
	if call := c.inflight[key]; call != nil {
		return nil, call, nil
	}
	c.misses++
	ch := &planClaim{chain: []*table.Snapshot{s}, keys: []planKey{key}}
	for len(ch.chain) <= maxPlanSteps {
		cur := ch.chain[len(ch.chain)-1]
		if cur.ParentSnapshotID == nil {
			ch.fromEmpty = true
			break
		}
		parent := meta.SnapshotByID(*cur.ParentSnapshotID)
		if parent == nil {
			break // expired: nothing to extend from
		}
		pk := planKeyFor(tbl, parent)
		if c.plans.Contains(pk) || c.inflight[pk] != nil {
			ch.base = parent
			break
		}
		ch.chain, ch.keys = append(ch.chain, parent), append(ch.keys, pk)
	}
	if ch.base == nil && !ch.fromEmpty {
		// Nothing to extend from: the planner plans the oldest of the
		// last few snapshots, and the rest are extended from it. They
		// are claimed with it, so that concurrent derivations of nearby
		// snapshots wait for this one plan rather than each run the
		// planner.
		n := min(len(ch.chain), coldPlanClaim)
		ch.chain, ch.keys = ch.chain[:n], ch.keys[:n]
	}
	ch.calls = make([]*planCall, len(ch.keys))
	for i, k := range ch.keys {
		ch.calls[i] = &planCall{done: make(chan struct{})}
		c.inflight[k] = ch.calls[i]
	}
	return nil, nil, ch
}

// finish completes a claimed call: caches its plan, lets its waiters go.
func (c *PlanCache) finish(k planKey, call *planCall, plan livePlan, err error) {
	call.plan, call.err = plan, err
	if err == nil {
		c.put(k, plan)
	}
	c.mu.Lock()
	delete(c.inflight, k)
	c.mu.Unlock()
	close(call.done)
}

// wait returns the call's plan once it is made.
func (call *planCall) wait(ctx context.Context) (livePlan, error) {
	select {
	case <-call.done:
		return call.plan, call.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// do returns plan k from the cache, else waits for the derivation making
// it, else makes it with plan and caches it. Only one plan per key runs at
// a time; a nil cache just makes it.
func (c *PlanCache) do(ctx context.Context, k planKey, plan func() (livePlan, error)) (livePlan, error) {
	if c == nil {
		return plan()
	}
	c.mu.Lock()
	if p, ok := c.plans.Get(k); ok {
		c.hits++
		c.mu.Unlock()
		return p, nil
	}
	if call, ok := c.inflight[k]; ok {
		c.mu.Unlock()
		return call.wait(ctx)
	}
	c.misses++
	call := &planCall{done: make(chan struct{})}
	c.inflight[k] = call
	c.mu.Unlock()
	var p livePlan
	err := errPlanAbandoned
	defer func() { c.finish(k, call, p, err) }()
	p, err = plan()
	return p, err
}
