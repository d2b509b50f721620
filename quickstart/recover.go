package quickstart

import (
	"context"
	"fmt"

	"github.com/apache/iceberg-go/table"
)

// syncLocked makes the model describe tbl's current snapshot. It is a no-op
// when the model already does (the common case: the demo is the only
// writer); otherwise it rebuilds the model from the table, which covers a
// restart, another writer's commit, and a commit iceberg-go rebased for us.
func (d *Demo) syncLocked(ctx context.Context, tbl *table.Table) error {
	var head int64
	if snap := tbl.CurrentSnapshot(); snap != nil {
		head = snap.SnapshotID
	}
	if d.ensured && d.model.snapshotID == head {
		return nil
	}
	m, err := rebuildModel(ctx, tbl)
	if err != nil {
		return fmt.Errorf("rebuild live rows of %v at snapshot %d: %w", tbl.Identifier(), head, err)
	}
	if d.ensured {
		d.log.Info().Int64("snapshot_id", head).Int("live_orders", len(m.rows)).
			Msg("demo table moved under the demo; reloaded its live rows")
	}
	d.model = m
	return nil
}

// rebuildModel recovers every live order and its (file, position) from the
// table alone. For each data file it reads the file twice through
// iceberg-go: once whole, ignoring deletes, where the row index is the
// position; once as planned, with the deletes applied, which tells which of
// those rows are live. order_id is unique within a file the demo writes, so
// it joins the two reads.
//
// The cost is two reads of every live data file, paid only on start-up and
// after someone else moves the table; the demo table stays small.
func rebuildModel(ctx context.Context, tbl *table.Table) (*model, error) {
	m := newModel()
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		return m, nil
	}
	m.snapshotID = snap.SnapshotID

	planned, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		return nil, fmt.Errorf("plan files: %w", err)
	}
	// A large file may be planned as several split tasks; positions are
	// per file, so the file is the unit here.
	var order []string
	byFile := make(map[string][]table.FileScanTask)
	for _, t := range planned {
		p := t.File.FilePath()
		if _, seen := byFile[p]; !seen {
			order = append(order, p)
		}
		byFile[p] = append(byFile[p], t)
	}

	for _, path := range order {
		tasks := byFile[path]
		if err := recoverFile(ctx, tbl, m, path, tasks); err != nil {
			return nil, fmt.Errorf("data file %s: %w", path, err)
		}
	}
	return m, nil
}

func recoverFile(ctx context.Context, tbl *table.Table, m *model, path string, tasks []table.FileScanTask) error {
	raw, err := readTasks(ctx, tbl, []table.FileScanTask{wholeFileTask(tasks[0].File)}, colOrderID)
	if err != nil {
		return fmt.Errorf("read without deletes: %w", err)
	}
	positions := make(map[int64][]int64, len(raw))
	for pos, o := range raw {
		positions[o.OrderID] = append(positions[o.OrderID], int64(pos))
		// Deleted ids count too, so a restarted demo never reuses the key
		// of an order it deleted: consumers would see an unrelated order
		// resurrect under an old key.
		m.nextID = max(m.nextID, o.OrderID+1)
	}

	live, err := readTasks(ctx, tbl, tasks)
	if err != nil {
		return fmt.Errorf("read with deletes: %w", err)
	}
	for _, o := range live {
		pos := positions[o.OrderID]
		if len(pos) != 1 {
			return fmt.Errorf("order_id %d occurs %d times in the file; cannot tell which row is live", o.OrderID, len(pos))
		}
		if prev, dup := m.rows[o.OrderID]; dup {
			return fmt.Errorf("order_id %d is live here and in %s", o.OrderID, prev.loc.file)
		}
		m.put(o, location{file: path, pos: pos[0]})
	}
	return nil
}
