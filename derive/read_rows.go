package derive

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// readTasks reads the rows of the tasks, in task order: a task that reads
// a whole flat data file with nothing to apply (no deletes, no residual)
// through fileRows, in this goroutine, decoding the file once; any other
// through iceberg-go's scanner (which projects every file onto the scan's
// schema, handling schema evolution) once its files passed
// checkTaskFiles. derive's scans carry no row filter of their own. The
// caller owns the returned batches.
func readTasks(ctx context.Context, fs icebergio.IO, scan *table.Scan, tasks []table.FileScanTask) ([]arrow.RecordBatch, error) {
	var (
		out     []arrow.RecordBatch
		scanned []table.FileScanTask // read by the scanner, together
	)
	flush := func() error {
		batches, err := scanTasks(ctx, fs, scan, scanned)
		out = append(out, batches...)
		scanned = scanned[:0]
		return err
	}
	for _, t := range tasks {
		if !plainTask(t) {
			scanned = append(scanned, t)
			continue
		}
		fr, _, err := openFileRows(ctx, fs, scan, t.File, 0, fileRowsBatch)
		if errors.Is(err, errNotFlat) {
			scanned = append(scanned, t)
			continue
		}
		if err == nil {
			err = flush()
		}
		if err == nil {
			out, err = readAllRows(fr, t.File, out)
		}
		if err != nil {
			releaseAll(out)
			return nil, err
		}
	}
	if err := flush(); err != nil {
		releaseAll(out)
		return nil, err
	}
	return out, nil
}

// fileRowsBatch is the rows per batch of a whole file read by fileRows, as
// iceberg-go's default (read.parquet.batch-size).
const fileRowsBatch = 1 << 17

// plainTask reports whether t reads a whole data file with nothing to
// apply to its rows.
func plainTask(t table.FileScanTask) bool {
	return len(t.DeleteFiles) == 0 && len(t.EqualityDeleteFiles) == 0 && len(t.DeletionVectorFiles) == 0 &&
		t.Residual == nil && t.Start == 0 && (t.Length == 0 || t.Length == t.File.FileSizeBytes())
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
