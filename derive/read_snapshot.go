package derive

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/changelog"
)

// ReadSnapshot returns every live row of a snapshot as an OpRead event: the
// compacted prefix of a topic whose older snapshots were expired. Rows come
// by data file path, in file order, so offsets are stable. A panic while
// reading (a decoder meeting a damaged file) is an error.
func ReadSnapshot(ctx context.Context, tbl *table.Table, snap changelog.SnapshotRef, opts Options) (_ *changelog.Changes, err error) {
	defer recoverRead(&err, func() string {
		return fmt.Sprintf("read %s snapshot %d", tableName(tbl), snap.SnapshotID)
	})
	s, c, err := snapshotChanges(tbl, snap, opts)
	if err != nil {
		return nil, err
	}
	tasks, err := liveTasks(ctx, tbl, s, opts)
	if err != nil {
		return nil, fmt.Errorf("read %s snapshot %d: %w", c.Table, c.SnapshotID, err)
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, fmt.Errorf("file IO: %w", err)
	}
	batches, err := readTasks(ctx, fs, tbl.Scan(table.WithSnapshotID(s.SnapshotID)), tasks, rowGroups{})
	if err != nil {
		return nil, fmt.Errorf("read %s snapshot %d: %w", c.Table, c.SnapshotID, err)
	}
	c.Batches = batches
	var rows int64
	for _, b := range batches {
		rows += b.NumRows()
	}
	c.Records = make([]changelog.Record, 0, rows)
	for bi, b := range batches {
		for r := range int32(b.NumRows()) {
			c.Records = append(c.Records, changelog.Record{Op: changelog.OpRead, Before: changelog.NoRow, After: changelog.RowRef{Batch: int32(bi), Row: r}})
		}
	}
	if err := finish(c); err != nil {
		return nil, err
	}
	return c, nil
}

// liveTasks returns the tasks that read the live rows of snapshot s, in
// the order ReadSnapshot reads them: by data file path.
func liveTasks(ctx context.Context, tbl *table.Table, s *table.Snapshot, opts Options) ([]table.FileScanTask, error) {
	plan, err := planSnapshotOnce(ctx, tbl, s.SnapshotID, opts.PlanCache)
	if err != nil {
		return nil, err
	}
	tasks := make([]table.FileScanTask, 0, len(plan))
	for _, t := range plan {
		tasks = append(tasks, t)
	}
	slices.SortFunc(tasks, func(a, b table.FileScanTask) int { return cmp.Compare(a.File.FilePath(), b.File.FilePath()) })
	return tasks, nil
}
