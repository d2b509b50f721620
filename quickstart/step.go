package quickstart

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/lake"
)

// maxCommitAttempts bounds the reload-and-retry loop of one Step. Conflicts
// come from other writers of the same table; a handful of attempts rides out
// a burst, and more would only hide a writer that commits continuously.
const maxCommitAttempts = 5

// Snapshot summary keys with the logical counts of a demo snapshot. Readers
// can check their derived change counts against them.
const (
	SummaryInserts = "lakegw.demo.inserts"
	SummaryUpdates = "lakegw.demo.updates"
	SummaryDeletes = "lakegw.demo.deletes"
)

// Step commits one snapshot and returns its id. The first snapshot of an
// empty table appends DemoOptions.InitialOrders orders; every later one
// inserts new orders and updates and deletes live ones, merge-on-read: the
// retired rows are deleted by position (v2 position delete files against
// the data files holding them) and the new images are written to a new data
// file, all committed together as one RowDelta snapshot (operation
// "overwrite", or "append" when there is nothing to delete).
//
// When another writer commits first, Step reloads the table, re-derives the
// live rows and plans again, up to a few times; the earlier attempt's files
// are removed.
func (d *Demo) Step(ctx context.Context) (int64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.ensured {
		if _, err := d.ensureLocked(ctx); err != nil {
			return 0, err
		}
	}
	var lastErr error
	for attempt := 1; attempt <= maxCommitAttempts; attempt++ {
		// Held while a compaction rewrites the files the demo deletes
		// rows from (lake.PropCompactionLease).
		tbl, err := lake.LoadUnleased(ctx, d.cat, d.opts.Table)
		if err != nil {
			return 0, err
		}
		if err := d.syncLocked(ctx, tbl); err != nil {
			return 0, err
		}
		id, err := d.commitOnce(ctx, tbl)
		if err == nil {
			return id, nil
		}
		if !lake.IsCommitConflict(err) {
			return 0, err
		}
		lastErr = err
		d.log.Info().Err(err).Int("attempt", attempt).Msg("demo commit conflicted with another writer; retrying")
	}
	return 0, fmt.Errorf("demo commit to %v: gave up after %d conflicting attempts: %w",
		d.opts.Table, maxCommitAttempts, lastErr)
}

// commitOnce plans, writes and commits one snapshot on top of tbl, whose
// current snapshot the model describes.
func (d *Demo) commitOnce(ctx context.Context, tbl *table.Table) (int64, error) {
	base := tbl.CurrentSnapshot()
	var baseID int64
	var baseSeq uint64
	if base != nil {
		baseID, baseSeq = base.SnapshotID, uint64(base.SequenceNumber)
	}
	// Seeding from the base sequence number, not a Step counter, makes the
	// plan a function of (seed, table history): a restarted demo continues
	// the same sequence, and a retry on a new base draws afresh.
	rng := rand.New(rand.NewPCG(d.opts.Seed, baseSeq))
	now := d.opts.Now().UTC().Truncate(time.Microsecond)
	plan := planStep(rng, d.model, now, d.opts)

	fsys, err := tbl.FS(ctx)
	if err != nil {
		return 0, fmt.Errorf("file IO of %v: %w", tbl.Identifier(), err)
	}
	wfs, ok := fsys.(icebergio.WriteFileIO)
	if !ok {
		return 0, fmt.Errorf("file IO of %v is read-only (%T)", tbl.Identifier(), fsys)
	}

	files, err := d.writeSnapshotFiles(ctx, tbl, wfs, plan)
	if err != nil {
		removeFiles(wfs, files.paths)
		return 0, err
	}

	committed, err := d.commitFiles(ctx, tbl, plan, files)
	if err != nil {
		// Only a clean conflict proves the catalog did not take the
		// snapshot; after any other failure the files may be live.
		if lake.IsCommitConflict(err) {
			removeFiles(wfs, files.paths)
		}
		return 0, err
	}

	snap := committed.CurrentSnapshot()
	if snap == nil {
		return 0, fmt.Errorf("commit to %v left no current snapshot", tbl.Identifier())
	}
	d.applyCommitted(ctx, committed, snap, baseID, plan, files.rowLocs)
	d.log.Info().Int64("snapshot_id", snap.SnapshotID).Str("operation", string(snap.Summary.Operation)).
		Int("inserts", len(plan.inserts)).Int("updates", len(plan.updates)).Int("deletes", len(plan.deletes)).
		Int("data_files", len(files.data)).Int("delete_files", len(files.deletes)).
		Int("live_orders", len(d.model.rows)).Msg("demo snapshot committed")
	return snap.SnapshotID, nil
}

// snapshotFiles are the files of one planned snapshot.
type snapshotFiles struct {
	data    []iceberg.DataFile
	deletes []iceberg.DataFile
	paths   []string           // everything written, for cleanup
	rowLocs map[int64]location // where each written row landed
}

func (d *Demo) writeSnapshotFiles(ctx context.Context, tbl *table.Table, wfs icebergio.WriteFileIO, plan stepPlan) (snapshotFiles, error) {
	var out snapshotFiles
	var err error
	out.data, out.rowLocs, err = writeRows(ctx, tbl, plan.written())
	for _, f := range out.data {
		out.paths = append(out.paths, f.FilePath())
	}
	if err != nil {
		return out, err
	}

	targets := make(map[string][]int64)
	for _, id := range plan.retired() {
		loc := d.model.rows[id].loc
		targets[loc.file] = append(targets[loc.file], loc.pos)
	}
	if len(targets) == 0 {
		return out, nil
	}
	var written []string
	out.deletes, written, err = writePositionDeletes(tbl, wfs, targets)
	out.paths = append(out.paths, written...)
	return out, err
}

func (d *Demo) commitFiles(ctx context.Context, tbl *table.Table, plan stepPlan, files snapshotFiles) (*table.Table, error) {
	tx := tbl.NewTransaction()
	// Pin the branch so that iceberg-go never replays this delta on a newer
	// head by itself (it does when the table sets commit.retry.num-retries).
	// A replay would commit the plan blind: the other writer's updates of
	// the same orders would leave two live rows per key, and its new order
	// ids could collide with ours. A failed pin is a conflict, and Step
	// replans on the new head instead.
	if err := tx.AssertRefSnapshotID(table.MainBranch); err != nil {
		return nil, fmt.Errorf("pin branch of %v: %w", tbl.Identifier(), err)
	}
	rd := tx.NewRowDelta(iceberg.Properties{
		SummaryInserts: strconv.Itoa(len(plan.inserts)),
		SummaryUpdates: strconv.Itoa(len(plan.updates)),
		SummaryDeletes: strconv.Itoa(len(plan.deletes)),
	})
	rd.AddRows(files.data...).AddDeletes(files.deletes...)
	if err := rd.Commit(ctx); err != nil {
		return nil, fmt.Errorf("stage row delta on %v: %w", tbl.Identifier(), err)
	}
	if d.beforeCommit != nil {
		if err := d.beforeCommit(ctx); err != nil {
			return nil, fmt.Errorf("before-commit hook: %w", err)
		}
	}
	// On a conflict its staged manifest list and manifests go too.
	committed, err := lake.CommitOrClean(ctx, tbl, tx)
	if err != nil {
		return nil, fmt.Errorf("commit row delta to %v: %w", tbl.Identifier(), err)
	}
	return committed, nil
}

// applyCommitted moves the model to the committed snapshot. When the
// snapshot sits directly on the base the plan was made against, the plan
// says exactly what changed. The branch pin in commitFiles should make that
// always so; should a catalog still land the commit elsewhere, the model is
// rebuilt from the table rather than trusted.
func (d *Demo) applyCommitted(ctx context.Context, committed *table.Table, snap *table.Snapshot, baseID int64, plan stepPlan, rowLocs map[int64]location) {
	var parent int64
	if snap.ParentSnapshotID != nil {
		parent = *snap.ParentSnapshotID
	}
	if parent != baseID {
		if err := d.syncLocked(ctx, committed); err != nil {
			// The snapshot is committed; a stale model only makes the
			// next Step rebuild it again, because snapshotID no longer
			// matches the head.
			d.log.Warn().Err(err).Msg("demo could not reload live rows after a rebased commit")
			d.model.snapshotID = 0
		}
		return
	}
	for _, id := range plan.deletes {
		delete(d.model.rows, id)
	}
	for _, o := range plan.written() {
		d.model.put(o, rowLocs[o.OrderID])
	}
	d.model.snapshotID = snap.SnapshotID
}

// removeFiles deletes files of a snapshot that was never committed. It is
// best effort: a leftover file is unreferenced garbage, not an error.
func removeFiles(fs icebergio.IO, paths []string) {
	for _, p := range paths {
		_ = fs.Remove(p)
	}
}
