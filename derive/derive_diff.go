package derive

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/rs/zerolog"

	"github.com/lakegw/lakegw/changelog"
)

// deriveDiff derives any snapshot that does more than append. The rows it
// removed are the before-images of the data files whose live rows changed
// (files removed, files with new deletes), the rows it added the
// after-images of files added (with the snapshot's own deletes applied, so
// rows added and deleted at once never appear); the two multisets are
// diffed so that carry-over rows of copy-on-write rewrites cancel. Deletes
// are always applied by iceberg-go, with the delete files its planner
// assigns to each file at each snapshot, so derivation agrees with what an
// Iceberg reader sees. Files whose change is only new positions or only new
// equality deletes are read in part (see fileChange).
func deriveDiff(ctx context.Context, tbl *table.Table, scan *table.Scan, s *table.Snapshot, delta *snapshotDelta, c *changelog.Changes, opts Options) error {
	fs, err := tbl.FS(ctx)
	if err != nil {
		return fmt.Errorf("file IO: %w", err)
	}
	started := time.Now()
	before, after, err := planDiff(ctx, tbl, s, delta, opts.PlanCache)
	if err != nil {
		return err
	}
	planned := time.Since(started)
	// Every live file of either state is classified (cheaply, from the
	// plans): added, removed, or changed by delete files.
	paths := make([]string, 0, len(after)+len(delta.removedData))
	for p := range after {
		paths = append(paths, p)
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)

	d := &differ{ctx: ctx, tbl: tbl, snapshotID: s.SnapshotID, fs: fs, scan: scan, schema: c.Schema, diff: newRowDiff(), positions: newPositionIndex(fs), rowGroups: opts.RowGroups.derivation(tbl.Metadata().TableUUID().String()), log: opts.Log}
	defer func() {
		if d.diff != nil {
			d.diff.release()
		}
	}()
	// The files with newly deleted positions are read first, concurrently
	// (their before-images are most of a merge-on-read snapshot's work);
	// the diff is then fed in path order, as it always was, so that
	// records keep the order their offsets were given in.
	kinds := map[fileChange]int{}
	fileKinds := make([]fileChange, len(paths))
	var posReads []*positionsRead
	for i, p := range paths {
		b, bok := before[p]
		a, aok := after[p]
		var bt, at *table.FileScanTask
		if bok {
			bt = &b
		}
		if aok {
			at = &a
		}
		fileKinds[i] = classifyFile(bt, at)
		kinds[fileKinds[i]]++
		if fileKinds[i] == newPositions {
			posReads = append(posReads, &positionsRead{before: b, after: a})
		}
	}
	d.readNewPositions(posReads)
	defer func() {
		for _, r := range posReads {
			releaseAll(r.batches)
		}
	}()

	var wholeBefore, wholeAfter []table.FileScanTask
	for i, p := range paths {
		b, bok := before[p]
		a, aok := after[p]
		switch fileKinds[i] {
		case unchanged:
			continue
		case newPositions:
			r := posReads[0]
			posReads = posReads[1:]
			if r.err != nil {
				return r.err
			}
			if r.handled {
				batches := r.batches
				r.batches = nil // the diff owns them now
				if err := d.add(batches, r.rows, true); err != nil {
					return err
				}
				continue
			}
		case newEqualityDeletes:
			handled, err := d.newEqualityDeletes(b, a)
			if err != nil {
				return err
			}
			if handled {
				continue
			}
		}
		if bok {
			wholeBefore = append(wholeBefore, b)
		}
		if aok {
			wholeAfter = append(wholeAfter, a)
		}
	}
	// One read per side lets iceberg-go decode the files in parallel; the
	// batches come in task order. After-images go last, so every removed
	// row is known when added rows are matched against them.
	if err := d.whole(wholeBefore, true); err != nil {
		return fmt.Errorf("before-image: %w", err)
	}
	if err := d.whole(wholeAfter, false); err != nil {
		return fmt.Errorf("after-image: %w", err)
	}
	opts.Log.Debug().Int64("snapshot", s.SnapshotID).Int("whole", kinds[wholeFile]).
		Int("positions", kinds[newPositions]).Int("equality", kinds[newEqualityDeletes]).
		Stringer("diff", d.diff).Dur("plan", planned).Dur("total", time.Since(started)).
		Msg("derived changes from file diff")

	recs, err := buildRecords(d.diff.batches, d.diff.deletes(), d.diff.inserts, c)
	if err != nil {
		return err
	}
	c.Batches = compactBatches(d.diff.batches, recs)
	c.Records = recs
	d.diff = nil
	return nil
}

// differ feeds the rows of changed files into a rowDiff.
type differ struct {
	ctx        context.Context
	tbl        *table.Table
	snapshotID int64
	fs         icebergio.IO
	scan       *table.Scan
	schema     *iceberg.Schema
	diff       *rowDiff
	positions  *positionIndex
	rowGroups  rowGroups
	log        zerolog.Logger
}

// whole reads every live row of the files as removed (before) or added.
func (d *differ) whole(tasks []table.FileScanTask, before bool) error {
	batches, err := readTasks(d.ctx, d.fs, d.scan, tasks, d.rowGroups)
	if err != nil {
		return err
	}
	return d.add(batches, nil, before)
}

// add hands batches to the diff; rows, when set, selects the rows of each
// batch that were removed.
func (d *differ) add(batches []arrow.RecordBatch, rows [][]int32, before bool) error {
	for i, b := range batches {
		var err error
		switch {
		case rows != nil && len(rows[i]) == 0:
			b.Release()
		case rows != nil:
			err = d.diff.addBeforeRows(b, rows[i])
		case before:
			err = d.diff.addBefore(b)
		default:
			err = d.diff.addAfter(b)
		}
		if err != nil {
			releaseAll(batches[i+1:])
			return err
		}
	}
	return nil
}

// positionsRead is the read of one data file with newly deleted
// positions: the rows at the positions deleted after but not before.
// handled is false when positions were un-deleted, which leaves the file to
// a whole diff.
type positionsRead struct {
	before, after table.FileScanTask
	handled       bool
	batches       []arrow.RecordBatch
	rows          [][]int32
	err           error
}

// readNewPositions runs the reads, up to GOMAXPROCS at once.
func (d *differ) readNewPositions(reads []*positionsRead) {
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for _, r := range reads {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			// A panic here would end the process: Derive's recover
			// does not reach this goroutine.
			defer recoverRead(&r.err, func() string { return "read data file " + r.after.File.FilePath() })
			r.handled, r.batches, r.rows, r.err = d.newPositions(r.before, r.after)
		}()
	}
	wg.Wait()
}

// newPositions reads the rows at the positions deleted after but not
// before; it declines (false) when positions were un-deleted. It is safe
// for concurrent use: it only reads files.
func (d *differ) newPositions(before, after table.FileScanTask) (bool, []arrow.RecordBatch, [][]int32, error) {
	delB, err := d.positions.deleted(d.ctx, before)
	if err != nil {
		return false, nil, nil, err
	}
	delA, err := d.positions.deleted(d.ctx, after)
	if err != nil {
		return false, nil, nil, err
	}
	fresh, grew := subtractSorted(delB, delA)
	if !grew {
		return false, nil, nil, nil
	}
	if len(fresh) == 0 {
		return true, nil, nil, nil
	}
	batches, rows, err := readRowsAt(d.ctx, d.fs, d.scan, after, fresh, d.rowGroups)
	if err != nil {
		return false, nil, nil, err
	}
	var n int
	for _, r := range rows {
		n += len(r)
	}
	if n != len(fresh) {
		releaseAll(batches)
		return false, nil, nil, fmt.Errorf("data file %s: found %d of %d deleted positions", after.File.FilePath(), n, len(fresh))
	}
	return true, batches, rows, nil
}

// newEqualityDeletes adds the rows live before that the new equality
// delete files match, reading the file with its earlier deletes and a
// filter built from the new delete keys (row groups pruned by statistics).
func (d *differ) newEqualityDeletes(before, after table.FileScanTask) (bool, error) {
	old := paths(before.EqualityDeleteFiles)
	var fresh []iceberg.DataFile
	for _, f := range after.EqualityDeleteFiles {
		if !slices.Contains(old, f.FilePath()) {
			fresh = append(fresh, f)
		}
	}
	started := time.Now()
	filter, ok, err := eqDeleteFilter(d.ctx, d.tbl, d.snapshotID, d.schema, fresh)
	if err != nil || !ok {
		return false, err
	}
	built := time.Since(started)
	t := before
	t.Residual = filter
	batches, err := readTasks(d.ctx, d.fs, d.scan, []table.FileScanTask{t}, rowGroups{})
	if err != nil {
		return false, err
	}
	d.log.Debug().Str("file", t.File.FilePath()).Dur("filter", built).Dur("read", time.Since(started)-built).
		Msg("read rows matching new equality deletes")
	return true, d.add(batches, nil, true)
}
