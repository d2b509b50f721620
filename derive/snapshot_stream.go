package derive

import (
	"context"
	"fmt"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/changelog"
)

// SnapshotCount returns how many records ReadSnapshot gives snap (its live
// rows) without holding them: a data file is counted from its manifest
// entry less what its position deletes or deletion vector delete (read
// from those files alone); one with equality deletes is read and counted
// a batch at a time. ok is false when the records are spread over more than one
// partition (by each row's key).
//
// A gateway indexes a large compacted prefix with it rather than reading
// the whole table into memory only to count it.
func SnapshotCount(ctx context.Context, tbl *table.Table, snap changelog.SnapshotRef, opts Options) (n int64, ok bool, err error) {
	defer recoverRead(&err, func() string {
		return fmt.Sprintf("count the live rows of %s snapshot %d", tableName(tbl), snap.SnapshotID)
	})
	p, ok, err := planLive(ctx, tbl, snap, opts)
	if !ok || err != nil {
		return 0, ok, err
	}
	return p.total(), true, nil
}

// OpenSnapshotStream is OpenAppendStream for the live rows of snap: the
// records ReadSnapshot gives it (OpRead events, data files by path),
// counted as SnapshotCount counts them when it opens; a file that then
// gives another number of rows is an error.
func OpenSnapshotStream(ctx context.Context, tbl *table.Table, snap changelog.SnapshotRef, opts Options) (_ *Stream, ok bool, err error) {
	defer recoverRead(&err, func() string {
		return fmt.Sprintf("plan the live rows of %s snapshot %d", tableName(tbl), snap.SnapshotID)
	})
	p, ok, err := planLive(ctx, tbl, snap, opts)
	if !ok || err != nil {
		return nil, ok, err
	}
	return newStream(ctx, tbl, snap, opts, p), true, nil
}

// planLive plans the live rows of snap on one partition; ok is false on
// several.
func planLive(ctx context.Context, tbl *table.Table, snap changelog.SnapshotRef, opts Options) (_ *streamPlan, ok bool, _ error) {
	if opts.Partitions > 1 {
		return nil, false, nil
	}
	s, err := findSnapshot(tbl, snap, opts)
	if err != nil {
		return nil, false, err
	}
	tasks, err := liveTasks(ctx, tbl, s, opts)
	if err != nil {
		return nil, false, fmt.Errorf("plan %s snapshot %d: %w", tableName(tbl), s.SnapshotID, err)
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("file IO: %w", err)
	}
	scan := tbl.Scan(table.WithSnapshotID(s.SnapshotID), table.WithArrowBatchSize(streamBatchRows))
	p := &streamPlan{snap: s, fs: fs, tasks: tasks, op: changelog.OpRead, first: make([]int64, 0, len(tasks)+1)}
	positions := newPositionIndex(fs)
	var n int64
	for _, t := range tasks {
		rows, err := liveRows(ctx, fs, scan, positions, t)
		if err != nil {
			return nil, false, err
		}
		p.first = append(p.first, n)
		n += rows
	}
	p.first = append(p.first, n)
	return p, true, nil
}

// liveRows is how many rows t reads: its data file's record count, less
// the positions its position deletes or deletion vector delete (read from
// those files alone); a file with equality deletes is read and counted.
func liveRows(ctx context.Context, fs icebergio.IO, scan *table.Scan, positions *positionIndex, t table.FileScanTask) (int64, error) {
	rows := t.File.Count()
	switch {
	case plainTask(t):
		return rows, nil
	case len(t.EqualityDeleteFiles) > 0 || !wholeFileTask(t):
		return countTaskRows(ctx, fs, scan, t)
	}
	deleted, err := positions.deleted(ctx, t)
	if err != nil {
		return 0, err
	}
	live := rows
	for _, p := range deleted {
		if p >= 0 && p < rows {
			live--
		}
	}
	return live, nil
}

// countTaskRows reads the rows of t (its deletes applied) and counts them,
// holding one batch at a time.
func countTaskRows(ctx context.Context, fs icebergio.IO, scan *table.Scan, t table.FileScanTask) (int64, error) {
	tasks := []table.FileScanTask{t}
	if err := checkTaskFiles(ctx, fs, tasks); err != nil {
		return 0, err
	}
	_, it, err := scan.ReadTasks(ctx, tasks)
	if err != nil {
		return 0, fmt.Errorf("plan read of %s: %w", describeTasks(tasks), err)
	}
	var n int64
	for rec, err := range it {
		if err != nil {
			return 0, readError(ctx, fs, scan, tasks, err)
		}
		n += rec.NumRows()
		rec.Release()
	}
	return n, nil
}
