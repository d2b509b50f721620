package changelog

import (
	"context"
	"fmt"
	"slices"

	"github.com/apache/iceberg-go/table"
)

// deriveDiff derives any snapshot that does more than append: it reads the
// data files whose live rows the snapshot changed (files added or removed,
// and files whose applicable delete files differ between the parent and the
// snapshot) as they were before and after, with deletes applied by
// iceberg-go, and diffs the two multisets of rows. This one rule covers
// position deletes, deletion vectors, equality deletes, copy-on-write
// rewrites (carry-over rows cancel) and rows added and deleted in the same
// snapshot (never visible, so never an event).
func deriveDiff(ctx context.Context, tbl *table.Table, scan *table.Scan, s *table.Snapshot, delta *snapshotDelta, c *Changes, opts Options) error {
	after, err := planSnapshot(ctx, tbl, s.SnapshotID)
	if err != nil {
		return err
	}
	before := livePlan{}
	if s.ParentSnapshotID != nil {
		if before, err = planSnapshot(ctx, tbl, *s.ParentSnapshotID); err != nil {
			return fmt.Errorf("parent state: %w", err)
		}
	}
	affected := map[string]bool{}
	for _, e := range delta.addedData {
		affected[e.DataFile().FilePath()] = true
	}
	for _, e := range delta.removedData {
		affected[e.DataFile().FilePath()] = true
	}
	for path, t := range after {
		if b, ok := before[path]; ok && !sameDeletes(b, t) {
			affected[path] = true
		}
	}
	paths := make([]string, 0, len(affected))
	for p := range affected {
		paths = append(paths, p)
	}
	slices.Sort(paths)
	opts.Log.Debug().Int64("snapshot", s.SnapshotID).Int("files", len(paths)).Msg("deriving changes from file diff")

	diff := newRowDiff()
	for _, p := range paths {
		t, ok := before[p]
		if !ok {
			continue
		}
		batches, err := readTasks(ctx, scan, []table.FileScanTask{t})
		if err != nil {
			diff.release()
			return fmt.Errorf("before-image: %w", err)
		}
		for i, b := range batches {
			if err := diff.addBefore(b); err != nil {
				releaseAll(batches[i+1:])
				diff.release()
				return err
			}
		}
	}
	for _, p := range paths {
		t, ok := after[p]
		if !ok {
			continue
		}
		batches, err := readTasks(ctx, scan, []table.FileScanTask{t})
		if err != nil {
			diff.release()
			return fmt.Errorf("after-image: %w", err)
		}
		for i, b := range batches {
			if err := diff.addAfter(b); err != nil {
				releaseAll(batches[i+1:])
				diff.release()
				return err
			}
		}
	}
	recs, err := buildRecords(diff.batches, diff.deletes(), diff.inserts, c)
	if err != nil {
		diff.release()
		return err
	}
	c.Batches = compactBatches(diff.batches, recs)
	c.Records = recs
	return nil
}
