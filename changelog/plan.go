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
type livePlan map[string]table.FileScanTask

func planSnapshot(ctx context.Context, tbl *table.Table, snapshotID int64) (livePlan, error) {
	snap := tbl.Metadata().SnapshotByID(snapshotID)
	if snap == nil {
		return nil, fmt.Errorf("snapshot %d is not in the table metadata (expired?)", snapshotID)
	}
	tasks, err := tbl.Scan(table.WithSnapshotID(snapshotID)).PlanFiles(ctx)
	if err != nil {
		return nil, fmt.Errorf("plan files of snapshot %d (manifest list %s): %w", snapshotID, snap.ManifestList, err)
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
