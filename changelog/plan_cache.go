package changelog

import (
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
	c := &PlanCache{maxFiles: max(maxFiles, 1)}
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
