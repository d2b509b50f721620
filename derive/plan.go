package derive

import (
	"context"
	"errors"
	"fmt"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// livePlan maps the path of every live data file of a snapshot to a scan
// task reading the whole file with exactly the delete files iceberg-go's
// planner applies to it at that snapshot (sequence numbers, partitions,
// deletion vectors over position deletes, statistics pruning). Using the
// planner keeps derivation consistent with what an Iceberg reader sees.
// A livePlan may be shared through a PlanCache: never modify one.
type livePlan map[string]table.FileScanTask

// maxPlanSteps bounds how many snapshots a plan is extended through, one
// delta each, from the nearest ancestor whose plan is cached or being made:
// past it, one run of iceberg-go's planner costs less.
const maxPlanSteps = 64

// planSnapshot returns the plan of a snapshot: from the cache; else
// extended, snapshot by snapshot through each one's own delta (the
// manifests it wrote), from the nearest ancestor within maxPlanSteps whose
// plan is cached or being made by another derivation (which it waits for)
// or from the empty table before the first snapshot; else from iceberg-go's
// planner, which reads every manifest. Every plan made on the way is
// cached, and concurrent requests for one snapshot plan it once: a cold
// reader deriving consecutive snapshots at once plans the table once, not
// once per snapshot.
func planSnapshot(ctx context.Context, tbl *table.Table, snapshotID int64, cache *PlanCache) (livePlan, error) {
	snap, err := plannedSnapshot(tbl, snapshotID)
	if err != nil {
		return nil, err
	}
	if cache == nil {
		return planFiles(ctx, tbl, snap, nil)
	}
	plan, wait, claim := cache.claimChain(tbl, snap)
	switch {
	case plan != nil:
		return plan, nil
	case wait != nil:
		return wait.wait(ctx)
	}
	return planClaimed(ctx, tbl, claim, cache)
}

// planSnapshotOnce returns the plan of a snapshot read whole once: from
// the cache when it is there, else planned (from the slim files of the
// last plan cached) and not cached. A compacted prefix is read so at every
// expiry, and its rows are what the changes cache keeps: its plan, every
// live file of the table in copies no neighbouring plan shares, stayed in
// the cache until 64 later plans pushed it out, several at a time on a
// streaming table, and was the largest growing part of a soak's live heap.
func planSnapshotOnce(ctx context.Context, tbl *table.Table, snapshotID int64, cache *PlanCache) (livePlan, error) {
	snap, err := plannedSnapshot(tbl, snapshotID)
	if err != nil {
		return nil, err
	}
	if plan, ok := cache.get(planKeyFor(tbl, snap)); ok {
		return plan, nil
	}
	return cache.planFiles(ctx, tbl, snap)
}

// plannedSnapshot is the snapshot a plan is asked for, which must still be
// in the table metadata.
func plannedSnapshot(tbl *table.Table, snapshotID int64) (*table.Snapshot, error) {
	snap := tbl.Metadata().SnapshotByID(snapshotID)
	if snap == nil {
		return nil, fmt.Errorf("snapshot %d is not in the table metadata (expired?)", snapshotID)
	}
	return snap, nil
}

// planClaimed makes the plans of a claimed chain, oldest first, completing
// each one's call as soon as it is made (or failed).
func planClaimed(ctx context.Context, tbl *table.Table, ch *planClaim, cache *PlanCache) (plan livePlan, err error) {
	done := 0
	defer func() {
		// Whatever happened, no waiter may wait forever.
		for i := len(ch.chain) - 1 - done; i >= 0; i-- {
			cache.finish(ch.keys[i], ch.calls[i], nil, fmt.Errorf("plan of snapshot %d not made: %w", ch.chain[i].SnapshotID, orAbandoned(err)))
		}
	}()
	i := len(ch.chain) - 1
	var parent *table.Snapshot
	plan = livePlan{}
	switch {
	case ch.base != nil:
		if plan, err = planSnapshot(ctx, tbl, ch.base.SnapshotID, cache); err != nil {
			return nil, err
		}
		parent = ch.base
	case !ch.fromEmpty:
		parent = ch.chain[i]
		if plan, err = cache.planFiles(ctx, tbl, parent); err != nil {
			return nil, err
		}
		cache.finish(ch.keys[i], ch.calls[i], plan, nil)
		done++
		i--
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, fmt.Errorf("file IO: %w", err)
	}
	for ; i >= 0; i-- {
		s := ch.chain[i]
		if plan, err = extendStep(ctx, tbl, fs, parent, s, plan, cache); err != nil {
			return nil, err
		}
		cache.finish(ch.keys[i], ch.calls[i], plan, nil)
		done++
		parent = s
	}
	return plan, nil
}

// orAbandoned is err, or errPlanAbandoned when a panic left it nil.
func orAbandoned(err error) error {
	if err == nil {
		return errPlanAbandoned
	}
	return err
}

var errPlanAbandoned = errors.New("planning stopped")

// extendStep plans snapshot s from its parent's plan and its own delta,
// or with iceberg-go's planner when extendPlan declines.
func extendStep(ctx context.Context, tbl *table.Table, fs icebergio.IO, parent, s *table.Snapshot, before livePlan, cache *PlanCache) (livePlan, error) {
	manifests, err := readManifestList(fs, s)
	if err != nil {
		return nil, err
	}
	delta, err := readDelta(fs, s, manifests)
	if err != nil {
		return nil, err
	}
	return extendOrPlan(ctx, tbl, parent, s, before, delta, cache)
}

// extendOrPlan plans snapshot s from its parent's plan (before) and s's
// delta when extendPlan can do so exactly, else with iceberg-go's planner.
func extendOrPlan(ctx context.Context, tbl *table.Table, parent, s *table.Snapshot, before livePlan, delta *snapshotDelta, cache *PlanCache) (livePlan, error) {
	if ext, ok := extendPlan(tbl, parent, s, before, delta); ok {
		checkExtendedPlan(tbl, s, ext)
		cache.countExtended()
		return ext, nil
	}
	return cache.planFiles(ctx, tbl, s)
}

// planFiles plans a snapshot with iceberg-go's planner, reading every
// manifest of the snapshot. The files it lists that donor (a plan of the
// same table, or nil) lists too are taken from donor rather than slimmed
// again: plans of nearby snapshots share most of their files.
func planFiles(ctx context.Context, tbl *table.Table, snap *table.Snapshot, donor livePlan) (livePlan, error) {
	if err := hasManifestList(snap); err != nil {
		return nil, err
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, fmt.Errorf("file IO of the table: %w", err)
	}
	if err := checkManifests(ctx, fs, snap); err != nil {
		return nil, err
	}
	tasks, err := tbl.Scan(table.WithSnapshotID(snap.SnapshotID)).PlanFiles(ctx)
	if err != nil {
		return nil, fmt.Errorf("plan files of snapshot %d (manifest list %s): %w", snap.SnapshotID, snap.ManifestList, err)
	}
	plan := make(livePlan, len(tasks))
	seen := slimFilesOf(donor)
	for _, t := range tasks {
		path := t.File.FilePath()
		if _, ok := plan[path]; ok {
			// A large file is split into several tasks that share
			// their delete files; one whole-file task is enough.
			continue
		}
		t.Start, t.Length, t.Residual = 0, t.File.FileSizeBytes(), nil
		t = slimTask(t, seen)
		// Keyed by the slim copy's path: the decoded one shares its
		// buffer with the rest of the manifest.
		plan[t.File.FilePath()] = t
	}
	return plan, nil
}

// planDiff returns the plans of snapshot s (after) and of its parent
// (before; empty without a parent). The after plan is derived from the
// parent's plan and the entries s added and removed (delta) when extendPlan
// can do so exactly, so that a snapshot whose parent's plan is cached costs
// only its own manifests; otherwise iceberg-go plans it.
func planDiff(ctx context.Context, tbl *table.Table, s *table.Snapshot, delta *snapshotDelta, cache *PlanCache) (before, after livePlan, err error) {
	var parent *table.Snapshot
	if s.ParentSnapshotID == nil {
		before = livePlan{}
	} else {
		parent = tbl.Metadata().SnapshotByID(*s.ParentSnapshotID)
		if before, err = planSnapshot(ctx, tbl, *s.ParentSnapshotID, cache); err != nil {
			return nil, nil, fmt.Errorf("parent state: %w", err)
		}
	}
	after, err = cache.do(ctx, planKeyFor(tbl, s), func() (livePlan, error) {
		return extendOrPlan(ctx, tbl, parent, s, before, delta, cache)
	})
	if err != nil {
		return nil, nil, err
	}
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
		checkExtendedPlan(tbl, s, after)
		cache.countExtended()
		cache.put(key, after)
	}
}
