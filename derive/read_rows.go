package derive

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// readTasks reads the rows of the tasks through iceberg-go (which projects
// every file onto the scan's schema, handling schema evolution), in task
// order, once their files passed checkTaskFiles. The caller owns the
// returned batches.
func readTasks(ctx context.Context, fs icebergio.IO, scan *table.Scan, tasks []table.FileScanTask) ([]arrow.RecordBatch, error) {
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
			batches, e := readTasks(ctx, fs, scan, []table.FileScanTask{t})
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
