package derive

import (
	"context"
	"errors"
	"fmt"
	"runtime"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"golang.org/x/sync/errgroup"
)

// readTasks reads the rows of the tasks, in task order: a task that reads
// a whole flat data file with nothing to apply (no deletes, no residual)
// through fileRows, decoding the file once; any other through iceberg-go's
// scanner (which projects every file onto the scan's schema, handling
// schema evolution) once its files passed checkTaskFiles. The files are
// read up to GOMAXPROCS at a time. derive's scans carry no row filter of
// their own. With a cache, a plain task's file of one row group is read as
// one batch and kept (see readPlainTask). The caller owns the returned
// batches.
func readTasks(ctx context.Context, fs icebergio.IO, scan *table.Scan, tasks []table.FileScanTask, cache rowGroups) ([]arrow.RecordBatch, error) {
	// Units of work in task order: a plain task alone, a run of others
	// together (the scanner reads those in parallel itself).
	type unit struct {
		tasks []table.FileScanTask
		plain bool
		out   []arrow.RecordBatch
	}
	var units []*unit
	for _, t := range tasks {
		plain := plainTask(t)
		if n := len(units); n > 0 && !plain && !units[n-1].plain {
			units[n-1].tasks = append(units[n-1].tasks, t)
			continue
		}
		units = append(units, &unit{tasks: []table.FileScanTask{t}, plain: plain})
	}
	read := func(ctx context.Context, u *unit) (err error) {
		// A panic in a goroutine of this group would end the process.
		defer recoverRead(&err, func() string { return "read " + describeTasks(u.tasks) })
		if u.plain {
			u.out, err = readPlainTask(ctx, fs, scan, u.tasks[0], cache)
		} else {
			u.out, err = scanTasks(ctx, fs, scan, u.tasks)
		}
		return err
	}
	var err error
	if len(units) == 1 {
		err = read(ctx, units[0])
	} else {
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(runtime.GOMAXPROCS(0))
		for _, u := range units {
			g.Go(func() error { return read(gctx, u) })
		}
		err = g.Wait()
	}
	var out []arrow.RecordBatch
	for _, u := range units {
		out = append(out, u.out...)
	}
	if err != nil {
		releaseAll(out)
		return nil, err
	}
	return out, nil
}

// readPlainTask reads a plain task's file through fileRows, or through the
// scanner when it is not flat. With a cache, a file of a single row group
// is read as one batch, which the cache keeps as that group: the newest
// files are the ones a merge-on-read table's next snapshots delete from
// (an order is updated soon after it is placed), and their before-images
// are then taken from rows already decoded.
func readPlainTask(ctx context.Context, fs icebergio.IO, scan *table.Scan, t table.FileScanTask, cache rowGroups) ([]arrow.RecordBatch, error) {
	batchRows := fileRowsBatch
	if cache.cacheable(t.File) {
		batchRows = max(batchRows, int(t.File.Count()))
	}
	out, err := readPlainFile(ctx, fs, scan, t, batchRows, cache)
	if err != nil && batchRows != fileRowsBatch && ctx.Err() == nil {
		// Read as one batch, a column can be one allocation over the
		// decode cap where batches of the default size are not: those
		// decide whether the file is damaged.
		out, err = readPlainFile(ctx, fs, scan, t, fileRowsBatch, rowGroups{})
	}
	return out, err
}

// readPlainFile reads a plain task's file batchRows rows at a time and,
// when it is one row group read as one batch, caches it.
func readPlainFile(ctx context.Context, fs icebergio.IO, scan *table.Scan, t table.FileScanTask, batchRows int, cache rowGroups) ([]arrow.RecordBatch, error) {
	fr, _, err := openFileRows(ctx, fs, scan, t.File, 0, batchRows)
	if errors.Is(err, errNotFlat) {
		return scanTasks(ctx, fs, scan, []table.FileScanTask{t})
	}
	if err != nil {
		return nil, err
	}
	oneGroup := fr.pf.NumRowGroups() == 1 && int64(batchRows) >= t.File.Count()
	if oneGroup && cache.enabled() {
		// The next snapshot's before-images wait for these rows rather
		// than decode the file again.
		done := cache.claim(t.File.FilePath(), 0)
		defer done()
	}
	out, err := readAllRows(fr, t.File, nil)
	if err != nil {
		releaseAll(out)
		return nil, err
	}
	if oneGroup && len(out) == 1 {
		if projected, err := scan.Projection(); err == nil {
			cache.add(t.File.FilePath(), 0, dataSeq(t), projected, out[0])
		}
	}
	return out, nil
}

// fileRowsBatch is the rows per batch of a whole file read by fileRows, as
// iceberg-go's default (read.parquet.batch-size).
const fileRowsBatch = 1 << 17

// plainTask reports whether t reads a whole data file with nothing to
// apply to its rows.
func plainTask(t table.FileScanTask) bool {
	return len(t.DeleteFiles) == 0 && len(t.EqualityDeleteFiles) == 0 && len(t.DeletionVectorFiles) == 0 && wholeFileTask(t)
}

// wholeFileTask reports whether t reads every row of its data file that
// its deletes leave: no residual filter, no byte range.
func wholeFileTask(t table.FileScanTask) bool {
	return t.Residual == nil && t.Start == 0 && (t.Length == 0 || t.Length == t.File.FileSizeBytes())
}

// readAllRows appends every batch of fr to out and closes it; the rows
// must be as many as the file's manifest entry lists.
func readAllRows(fr *fileRows, f iceberg.DataFile, out []arrow.RecordBatch) ([]arrow.RecordBatch, error) {
	defer fr.close()
	var rows int64
	for {
		b, err := fr.next()
		if err != nil {
			return out, fmt.Errorf("data file %s: %w", f.FilePath(), err)
		}
		if b == nil {
			break
		}
		out = append(out, b)
		rows += b.NumRows()
	}
	if rows != f.Count() {
		return out, fmt.Errorf("data file %s: read %d rows, its manifest lists %d", f.FilePath(), rows, f.Count())
	}
	return out, nil
}

// scanTasks reads the tasks through iceberg-go's scanner, once their files
// passed checkTaskFiles.
func scanTasks(ctx context.Context, fs icebergio.IO, scan *table.Scan, tasks []table.FileScanTask) ([]arrow.RecordBatch, error) {
	if len(tasks) == 0 {
		return nil, nil
	}
	if err := checkTaskFiles(ctx, fs, tasks); err != nil {
		return nil, err
	}
	_, it, err := scan.ReadTasks(ctx, tasks)
	if err != nil {
		return nil, fmt.Errorf("plan read of %s: %w", describeTasks(tasks), err)
	}
	var out []arrow.RecordBatch
	for rec, err := range it {
		if err != nil {
			releaseAll(out)
			return nil, readError(ctx, fs, scan, tasks, err)
		}
		out = append(out, rec)
	}
	return out, nil
}

// readError names the file a failed read of several tasks choked on (a
// damaged table must say which file is missing), by reading them one by
// one; this only runs on the error path.
func readError(ctx context.Context, fs icebergio.IO, scan *table.Scan, tasks []table.FileScanTask, err error) error {
	if len(tasks) > 1 {
		for _, t := range tasks {
			batches, e := scanTasks(ctx, fs, scan, []table.FileScanTask{t})
			if e != nil {
				return e
			}
			releaseAll(batches)
		}
	}
	return fmt.Errorf("read %s: %w", describeTasks(tasks), err)
}

func describeTasks(tasks []table.FileScanTask) string {
	if len(tasks) == 1 {
		return "data file " + tasks[0].File.FilePath()
	}
	return fmt.Sprintf("%d data files (first %s)", len(tasks), tasks[0].File.FilePath())
}

func releaseAll(batches []arrow.RecordBatch) {
	for _, b := range batches {
		b.Release()
	}
}
