package changelog

import (
	"context"
	"fmt"

	"github.com/apache/iceberg-go/table"
)

// livePlan maps the path of every live data file of a snapshot to a scan
// task reading the whole file with exactly the delete files iceberg-go's
// planner applies to it at that snapshot (sequence numbers, partitions,
// deletion vectors over position deletes, statistics pruning). Using the
// planner keeps derivation consistent with what an Iceberg reader sees.
// A livePlan may be shared through a PlanCache: never modify one.
type livePlan map[string]table.FileScanTask

// planSnapshot returns the plan of a snapshot, from the cache or from
// iceberg-go's planner (then cached).
func planSnapshot(ctx context.Context, tbl *table.Table, snapshotID int64, cache *PlanCache) (livePlan, error) {
	snap := tbl.Metadata().SnapshotByID(snapshotID)
	if snap == nil {
		return nil, fmt.Errorf("snapshot %d is not in the table metadata (expired?)", snapshotID)
	}
	key := planKeyFor(tbl, snap)
	if plan, ok := cache.get(key); ok {
		return plan, nil
	}
	plan, err := planFiles(ctx, tbl, snap)
	if err != nil {
		return nil, err
	}
	cache.put(key, plan)
	return plan, nil
}

// planFiles plans a snapshot with iceberg-go's planner, reading every
// manifest of the snapshot.
func planFiles(ctx context.Context, tbl *table.Table, snap *table.Snapshot) (livePlan, error) {
	tasks, err := tbl.Scan(table.WithSnapshotID(snap.SnapshotID)).PlanFiles(ctx)
	if err != nil {
		return nil, fmt.Errorf("plan files of snapshot %d (manifest list %s): %w", snap.SnapshotID, snap.ManifestList, err)
	}
	plan := make(livePlan, len(tasks))
	for _, t := range tasks {
		path := t.File.FilePath()
		if _, ok := plan[path]; ok {
			// A large file is split into several tasks that share
			// their delete files; one whole-file task is enough.
			continue
		}
		t.Start, t.Length, t.Residual = 0, t.File.FileSizeBytes(), nil
		plan[path] = t
	}
	return plan, nil
}

// planDiff returns the plans of snapshot s (after) and of its parent
// (before; empty without a parent). The after plan is derived from the
// parent's plan and the entries s added and removed (delta) when extendPlan
// can do so exactly, so that a snapshot whose parent's plan is cached costs
// only its own manifests; otherwise iceberg-go plans it.
func planDiff(ctx context.Context, tbl *table.Table, s *table.Snapshot, delta *snapshotDelta, cache *PlanCache) (before, after livePlan, err error) {
	key := planKeyFor(tbl, s)
	after, cached := cache.get(key)
	var parent *table.Snapshot
	if s.ParentSnapshotID == nil {
		before = livePlan{}
	} else {
		parent = tbl.Metadata().SnapshotByID(*s.ParentSnapshotID)
		if before, err = planSnapshot(ctx, tbl, *s.ParentSnapshotID, cache); err != nil {
			return nil, nil, fmt.Errorf("parent state: %w", err)
		}
	}
	if cached {
		return before, after, nil
	}
	if ext, ok := extendPlan(tbl, parent, s, before, delta); ok {
		if extendedPlanCheck != nil {
			extendedPlanCheck(tbl, s, ext)
		}
		after = ext
	} else if after, err = planFiles(ctx, tbl, s); err != nil {
		return nil, nil, err
	}
	cache.put(key, after)
	return before, after, nil
}

// notePlan caches the plan of snapshot s when its parent's plan is cached
// and extendPlan can derive it: a pure append is derived without planning,
// and the next snapshot needs its plan as the before state.
func notePlan(tbl *table.Table, s *table.Snapshot, delta *snapshotDelta, cache *PlanCache) {
	if cache == nil {
		return
	}
	key := planKeyFor(tbl, s)
	if cache.has(key) {
		return
	}
	var parent *table.Snapshot
	before := livePlan{}
	if s.ParentSnapshotID != nil {
		if parent = tbl.Metadata().SnapshotByID(*s.ParentSnapshotID); parent == nil {
			return
		}
		var ok bool
		if before, ok = cache.get(planKeyFor(tbl, parent)); !ok {
			return
		}
	}
	if after, ok := extendPlan(tbl, parent, s, before, delta); ok {
		if extendedPlanCheck != nil {
			extendedPlanCheck(tbl, s, after)
		}
		cache.put(key, after)
	}
}

// extendedPlanCheck, set by tests, checks every plan extendPlan derives
// against iceberg-go's planner.
var extendedPlanCheck func(tbl *table.Table, s *table.Snapshot, plan livePlan)
