package maintain

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/changelog"
	"github.com/lakegw/lakegw/lake"
)

// SummaryMaintenance is the snapshot summary key naming the maintenance
// step that committed a snapshot ("compaction").
const SummaryMaintenance = "lakegw.maintenance"

// compact rewrites the live rows of a merge-on-read table into few data
// files, applying its position deletes and dropping them, once its data or
// delete files pass the thresholds. The result is a `replace` snapshot:
// the rows are the same, so the gateway derives no change events from it.
//
// A lakegw LSM table is compacted by lsm/ (its runs and changelog files
// follow the LSM layout), and a partitioned table is left alone: the demo
// and the tables lakegw writes are unpartitioned, and one group per
// partition is work for when a partitioned writer exists.
//
// Compaction is the one slow step, so it is the one a busy writer races.
// The rewritten files are kept across attempts while their inputs (each
// rewritten data file and the delete files applying to it) are unchanged:
// an append-only writer's commits then cost a cheap re-commit, not a new
// rewrite. A writer deleting rows in those files forces a new rewrite, so
// lakegw's own such writers hold their commits while a compaction lease
// is set (lake.PropCompactionLease); when every attempt still loses (a foreign
// writer), the step is skipped until the next pass.
func (p *pass) compact(ctx context.Context, rep *CompactionReport) error {
	if p.opts.CompactDataFiles < 0 {
		rep.Skipped = "turned off"
		return nil
	}
	if tbl, err := p.cat.LoadTable(ctx, p.ident); err == nil && changelog.IsRawTable(tbl.Properties()) && tbl.CurrentSnapshot() != nil {
		return p.compactRaw(ctx, tbl, rep)
	}
	c := &compaction{pass: p, rep: rep}
	err := c.run(ctx)
	if c.leased && !c.committed {
		if lerr := lake.EndCompactionLease(ctx, p.cat, p.ident); lerr != nil {
			p.log.Warn().Err(lerr).Msg("could not end the compaction lease; it ends by itself")
		}
	}
	// Files of a rewrite that was never committed are garbage now, not
	// orphans to wait a day for.
	if _, rerr := lake.RemoveFiles(ctx, c.tbl, c.uncommitted()); rerr != nil {
		p.log.Warn().Err(rerr).Msg("could not remove the files of an uncommitted compaction; orphan cleanup will")
	}
	if errors.Is(err, errStarved) {
		p.log.Info().Err(err).Msg("compaction lost every race with the table's writers; next pass")
		rep.Skipped = fmt.Sprintf("writers committed during each of %d attempts", p.opts.CommitAttempts)
		return nil
	}
	return err
}

// compaction is one compaction step: the rewrite it holds and whether it
// was committed.
type compaction struct {
	*pass
	rep       *CompactionReport
	tbl       *table.Table
	result    *table.CompactionGroupResult
	inputs    string // inputsKey of result's inputs
	committed bool
	leased    bool // the compaction lease is set (lake.PropCompactionLease)
}

// withinThresholds reports (and notes in rep) that the current snapshot's
// manifest list counts no more live files than the thresholds, so that no
// manifest is read to learn the table needs no rewrite (liveFileCounts).
func (c *compaction) withinThresholds(ctx context.Context, tbl *table.Table, rep *CompactionReport) (bool, error) {
	fs, err := tbl.FS(ctx)
	if err != nil {
		return false, fmt.Errorf("file IO: %w", err)
	}
	mans, err := c.opts.Manifests.manifests(fs, *tbl.CurrentSnapshot())
	if err != nil {
		return false, err
	}
	data, deletes, ok := liveFileCounts(mans)
	if !ok || data > c.opts.CompactDataFiles || deletes > c.opts.CompactDeleteFiles {
		return false, nil
	}
	rep.DataFilesBefore, rep.DeleteFilesBefore = data, deletes
	rep.Skipped = fmt.Sprintf("%d data and %d delete files, thresholds %d and %d",
		data, deletes, c.opts.CompactDataFiles, c.opts.CompactDeleteFiles)
	return true, nil
}

// errLeaseTaken makes run plan again, without counting an attempt, once
// the compaction lease is set.
var errLeaseTaken = errors.New("compaction lease taken")

func (c *compaction) run(ctx context.Context) error {
	var lastErr error
	for attempt := 1; attempt <= c.opts.CommitAttempts; attempt++ {
		done, err := c.attempt(ctx)
		if errors.Is(err, errLeaseTaken) {
			attempt--
			continue
		}
		if done || err == nil {
			return err
		}
		if !lake.IsCommitConflict(err) {
			return fmt.Errorf("compaction of %s: %w", c.name, err)
		}
		lastErr = err
		c.log.Debug().Err(err).Int("attempt", attempt).Msg("compaction commit conflicted; reloading")
	}
	return fmt.Errorf("compaction of %s: %w after %d conflicting commits: %w", c.name, errStarved, c.opts.CommitAttempts, lastErr)
}

// attempt plans, rewrites (or reuses the rewrite) and commits once. done
// is true when there is nothing (more) to do.
func (c *compaction) attempt(ctx context.Context) (done bool, err error) {
	tbl, err := c.cat.LoadTable(ctx, c.ident)
	if err != nil {
		return true, fmt.Errorf("compaction: load %s: %w", c.name, err)
	}
	c.tbl = tbl
	rep := c.rep
	*rep = CompactionReport{Rewrites: rep.Rewrites}
	switch {
	case changelog.IsLSMTable(tbl.Properties()):
		rep.Skipped = "lakegw LSM table: lsm compacts it"
		return true, nil
	case tbl.CurrentSnapshot() == nil:
		rep.Skipped = "no snapshot"
		return true, nil
	case !tbl.Spec().IsUnpartitioned():
		rep.Skipped = "partitioned table"
		return true, nil
	}
	if skip, err := c.withinThresholds(ctx, tbl, rep); err != nil || skip {
		return true, err
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		return true, fmt.Errorf("plan files: %w", err)
	}
	rep.DataFilesBefore, rep.DeleteFilesBefore, _ = countFiles(tasks)
	if rep.DataFilesBefore <= c.opts.CompactDataFiles && rep.DeleteFilesBefore <= c.opts.CompactDeleteFiles {
		rep.Skipped = fmt.Sprintf("%d data and %d delete files, thresholds %d and %d",
			rep.DataFilesBefore, rep.DeleteFilesBefore, c.opts.CompactDataFiles, c.opts.CompactDeleteFiles)
		return true, nil
	}
	group := boundedGroup(tasks, c.opts.MaxCompactFiles)
	if c.opts.DryRun {
		rep.DataFilesRewritten, _, _ = countFiles(group)
		rep.DeleteFilesRemoved = len(safeForGroup(table.CollectSafePositionDeletes(group), tasks, group))
		return true, nil
	}
	if !c.leased {
		// Hold lakegw's writers, then plan again on the table as the
		// lease left it.
		if err := lake.TakeCompactionLease(ctx, c.cat, c.ident); err != nil {
			return true, err
		}
		c.leased = true
		return false, errLeaseTaken
	}
	if c.result == nil || inputsKey(tasks, c.result.OldDataFiles) != c.inputs {
		if _, err := lake.RemoveFiles(ctx, tbl, c.uncommitted()); err != nil {
			return true, fmt.Errorf("remove the files of a superseded rewrite: %w", err)
		}
		// A rewrite whose inputs are all still planned as they were is
		// reused above, even where a fresh pick would differ.
		_, _, size := countFiles(group)
		gr, err := table.ExecuteCompactionGroup(ctx, tbl, table.CompactionTaskGroup{Tasks: group, TotalSizeBytes: size})
		if err != nil {
			return true, fmt.Errorf("rewrite data files: %w", err)
		}
		gr.SafePosDeletes = safeForGroup(gr.SafePosDeletes, tasks, group)
		c.result, c.inputs = &gr, inputsKey(tasks, gr.OldDataFiles)
		rep.Rewrites++
	}
	gr := c.result
	rep.DataFilesRewritten, rep.DataFilesAdded = len(gr.OldDataFiles), len(gr.NewDataFiles)
	rep.DeleteFilesRemoved = len(gr.SafePosDeletes) + len(gr.SafeDeletionVectors)

	if c.opts.BeforeCompactionCommit != nil {
		c.opts.BeforeCompactionCommit(ctx)
	}
	tx := tbl.NewTransaction()
	// The rewrite ends the lease in the same commit.
	if err := lake.EndLeaseIn(tx); err != nil {
		return true, err
	}
	if err := tx.NewRewrite(iceberg.Properties{SummaryMaintenance: "compaction"}).ApplyResult(*gr).Commit(ctx); err != nil {
		return true, fmt.Errorf("stage rewrite: %w", err)
	}
	committed, err := lake.CommitOrClean(ctx, tbl, tx)
	if err != nil {
		return false, err
	}
	c.committed = true
	if snap := committed.CurrentSnapshot(); snap != nil {
		rep.SnapshotID = snap.SnapshotID
	}
	c.log.Info().Int("data_files", rep.DataFilesRewritten).Int("into", rep.DataFilesAdded).
		Int("delete_files", rep.DeleteFilesRemoved).Msg("compacted small files")
	return true, nil
}

// uncommitted lists the files of a rewrite that is not (yet) committed.
func (c *compaction) uncommitted() []string {
	if c.result == nil || c.committed {
		return nil
	}
	var out []string
	for _, f := range c.result.NewDataFiles {
		out = append(out, f.FilePath())
	}
	return out
}

// inputsKey describes the inputs of a rewrite of files in the planned
// tasks: each file with the delete files that apply to it. Equal keys mean
// the rewrite's output is still exactly those files' live rows. A file no
// longer planned makes the key differ.
func inputsKey(tasks []table.FileScanTask, files []iceberg.DataFile) string {
	deletes := make(map[string][]string, len(tasks))
	for _, t := range tasks {
		p := t.File.FilePath()
		deletes[p] = append(deletes[p], "") // planned, even with no deletes
		for _, set := range [][]iceberg.DataFile{t.DeleteFiles, t.EqualityDeleteFiles, t.DeletionVectorFiles} {
			for _, d := range set {
				deletes[p] = append(deletes[p], d.FilePath())
			}
		}
	}
	var b strings.Builder
	for _, f := range files {
		ds, planned := deletes[f.FilePath()]
		if !planned {
			return "missing " + f.FilePath()
		}
		slices.Sort(ds)
		b.WriteString(f.FilePath())
		b.WriteString("[")
		b.WriteString(strings.Join(slices.Compact(ds), ","))
		b.WriteString("]\n")
	}
	return b.String()
}

// countFiles counts the distinct data and delete files of planned tasks,
// and the bytes of the data files.
func countFiles(tasks []table.FileScanTask) (data, deletes int, size int64) {
	seenData := make(map[string]bool, len(tasks))
	seenDel := make(map[string]bool)
	for _, t := range tasks {
		if p := t.File.FilePath(); !seenData[p] {
			seenData[p] = true
			size += t.File.FileSizeBytes()
		}
		for _, set := range [][]iceberg.DataFile{t.DeleteFiles, t.EqualityDeleteFiles, t.DeletionVectorFiles} {
			for _, d := range set {
				seenDel[d.FilePath()] = true
			}
		}
	}
	return len(seenData), len(seenDel), size
}

// boundedGroup picks the tasks of at most maxFiles of the planned data
// files for one rewrite, the files with the most delete files first: a
// rewrite's time must not grow with what accumulated before it. A table
// that fell behind (a burst of commits, passes that lost their races)
// otherwise needs ever longer rewrites, while the pass, and the expiry of
// every table after it, waits: a 4,000-commit soak's demo table reached
// 419 data and 1,628 delete files, and its rewrite held the maintenance
// loop for minutes. What is left is compacted by the next passes.
//
// A file larger than read.split.target-size is planned as several tasks,
// one per byte range: a file is picked with every one of them, since the
// rewrite replaces the whole file with the rows of the ranges it read.
func boundedGroup(tasks []table.FileScanTask, maxFiles int) []table.FileScanTask {
	type file struct {
		tasks   []table.FileScanTask
		deletes int
	}
	var files []*file
	byPath := map[string]*file{}
	for _, t := range tasks {
		f := byPath[t.File.FilePath()]
		if f == nil {
			f = &file{}
			byPath[t.File.FilePath()] = f
			files = append(files, f)
		}
		f.tasks = append(f.tasks, t)
		f.deletes = max(f.deletes, len(t.DeleteFiles)+len(t.EqualityDeleteFiles)+len(t.DeletionVectorFiles))
	}
	if len(files) <= maxFiles {
		return tasks
	}
	slices.SortStableFunc(files, func(a, b *file) int { return b.deletes - a.deletes })
	var out []table.FileScanTask
	for _, f := range files[:max(maxFiles, 1)] {
		out = append(out, f.tasks...)
	}
	return out
}

// safeForGroup keeps the position delete files that apply to no data file
// outside the rewritten group. iceberg-go calls every delete file of the
// group's tasks safe to remove, which holds only when the group is the
// whole table: a delete file that also applies to a file left as it is
// must stay, or the rows it deletes there come back.
func safeForGroup(safe []iceberg.DataFile, all, group []table.FileScanTask) []iceberg.DataFile {
	inGroup := make(map[string]bool, len(group))
	for _, t := range group {
		inGroup[t.File.FilePath()] = true
	}
	elsewhere := make(map[string]bool)
	for _, t := range all {
		if inGroup[t.File.FilePath()] {
			continue
		}
		for _, d := range t.DeleteFiles {
			elsewhere[d.FilePath()] = true
		}
	}
	out := safe[:0:0]
	for _, d := range safe {
		if !elsewhere[d.FilePath()] {
			out = append(out, d)
		}
	}
	return out
}
