package quickstart

import (
	"context"
	"fmt"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// scanOrders reads the live rows of the table's current snapshot (or the one
// chosen by opts) with iceberg-go's scanner. A key seen twice means a delete was not applied (or
// another writer broke the identifier), which the oracle must not hide.
func scanOrders(ctx context.Context, tbl *table.Table, opts ...table.ScanOption) (map[int64]Order, error) {
	out := make(map[int64]Order)
	if tbl.CurrentSnapshot() == nil {
		return out, nil
	}
	_, records, err := tbl.Scan(opts...).ToArrowRecords(ctx)
	if err != nil {
		return nil, fmt.Errorf("scan %v: %w", tbl.Identifier(), err)
	}
	for rec, err := range records {
		if err != nil {
			return nil, fmt.Errorf("scan %v: %w", tbl.Identifier(), err)
		}
		orders, err := recordToOrders(rec)
		rec.Release()
		if err != nil {
			return nil, fmt.Errorf("decode scan of %v: %w", tbl.Identifier(), err)
		}
		for _, o := range orders {
			if _, dup := out[o.OrderID]; dup {
				return nil, fmt.Errorf("scan of %v returned order_id %d twice", tbl.Identifier(), o.OrderID)
			}
			out[o.OrderID] = o
		}
	}
	return out, nil
}

// readTasks reads the given tasks of tbl, projected to fields (all columns
// when none), and returns the rows in task and file order. With one task
// over a whole file and no delete files, the index of a row in the result is
// its position in the file: that is how the demo learns positions without a
// _pos metadata column, which iceberg-go's scanner does not offer.
func readTasks(ctx context.Context, tbl *table.Table, tasks []table.FileScanTask, fields ...string) ([]Order, error) {
	var opts []table.ScanOption
	if len(fields) > 0 {
		opts = append(opts, table.WithSelectedFields(fields...))
	}
	// One worker keeps batches in file order without relying on the
	// scanner's reordering of parallel tasks.
	opts = append(opts, table.WithMaxConcurrency(1))
	_, records, err := tbl.Scan(opts...).ReadTasks(ctx, tasks)
	if err != nil {
		return nil, err
	}
	var out []Order
	for rec, err := range records {
		if err != nil {
			return nil, err
		}
		orders, err := recordToOrders(rec)
		rec.Release()
		if err != nil {
			return nil, err
		}
		out = append(out, orders...)
	}
	return out, nil
}

// wholeFileTask is a task that reads every row of a data file, ignoring any
// delete file that applies to it.
func wholeFileTask(f iceberg.DataFile) table.FileScanTask {
	return table.FileScanTask{File: f, Start: 0, Length: f.FileSizeBytes()}
}

// RowsAt reads the live rows of the table at one snapshot with an
// iceberg-go scan. Maintenance tests use it to check that every retained
// snapshot still reads whole after files were removed.
func (d *Demo) RowsAt(ctx context.Context, snapshotID int64) (map[int64]Order, error) {
	tbl, err := d.cat.LoadTable(ctx, d.opts.Table)
	if err != nil {
		return nil, fmt.Errorf("load %v: %w", d.opts.Table, err)
	}
	return RowsOf(ctx, tbl, snapshotID)
}

// RowsOf reads the live rows of a state of the demo table (a view that
// holds snapshots the catalog's metadata expired, for one) at one snapshot
// with an iceberg-go scan.
func RowsOf(ctx context.Context, tbl *table.Table, snapshotID int64) (map[int64]Order, error) {
	return scanOrders(ctx, tbl, table.WithSnapshotID(snapshotID))
}
