package quickstart

import (
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// writeRows writes the rows as new data files and returns where each row
// landed. Positions are read back from the written files rather than
// assumed from input order, so they stay right however iceberg-go's writer
// splits or orders its output.
func writeRows(ctx context.Context, tbl *table.Table, orders []Order) ([]iceberg.DataFile, map[int64]location, error) {
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		return nil, nil, fmt.Errorf("arrow schema of %v: %w", tbl.Identifier(), err)
	}
	rec, err := ordersToRecord(sc, orders)
	if err != nil {
		return nil, nil, fmt.Errorf("encode orders: %w", err)
	}
	// WriteRecords releases every batch it is given.
	batches := func(yield func(arrow.RecordBatch, error) bool) { yield(rec, nil) }

	var files []iceberg.DataFile
	for f, err := range table.WriteRecords(ctx, tbl, sc, batches) {
		if err != nil {
			return files, nil, fmt.Errorf("write data files of %v: %w", tbl.Identifier(), err)
		}
		files = append(files, f)
	}

	locs := make(map[int64]location, len(orders))
	for _, f := range files {
		rows, err := readTasks(ctx, tbl, []table.FileScanTask{wholeFileTask(f)}, colOrderID)
		if err != nil {
			return files, nil, fmt.Errorf("read back %s: %w", f.FilePath(), err)
		}
		for pos, o := range rows {
			locs[o.OrderID] = location{file: f.FilePath(), pos: int64(pos)}
		}
	}
	for _, o := range orders {
		if _, ok := locs[o.OrderID]; !ok {
			return files, nil, fmt.Errorf("order_id %d is in none of the %d written data files", o.OrderID, len(files))
		}
	}
	return files, locs, nil
}
