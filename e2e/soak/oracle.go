package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/catalog"
)

// scanTable reads the current snapshot of spec's table with iceberg-go
// (which applies every delete file): the oracle each materialized copy
// must equal. It returns the rows by key, rendered as tableSpec.rowOf
// renders a debezium image, and the snapshot read.
func scanTable(ctx context.Context, cat catalog.Catalog, spec tableSpec) (map[string]string, int64, error) {
	tbl, err := cat.LoadTable(ctx, spec.ident)
	if err != nil {
		return nil, 0, err
	}
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		return map[string]string{}, 0, nil
	}
	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		return nil, 0, fmt.Errorf("scan %s: %w", spec.topic, err)
	}
	defer at.Release()
	out := map[string]string{}
	tr := array.NewTableReader(at, 4096)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		cols := map[string]arrow.Array{}
		for i, f := range rec.Schema().Fields() {
			cols[f.Name] = rec.Column(i)
		}
		for i := range int(rec.NumRows()) {
			img := map[string]any{}
			for name, col := range cols {
				img[name] = jsonLike(col, i)
			}
			k, row, err := spec.rowOf(img)
			if err != nil {
				return nil, 0, fmt.Errorf("scan %s: %w", spec.topic, err)
			}
			if _, dup := out[k]; dup {
				return nil, 0, fmt.Errorf("scan %s: key %s is live twice", spec.topic, k)
			}
			out[k] = row
		}
	}
	return out, snap.SnapshotID, tr.Err()
}

// jsonLike is an Arrow value as encoding/json with UseNumber decodes the
// same value from lakegw's debezium-json (for the column types the soak
// compares: integers and strings).
func jsonLike(col arrow.Array, i int) any {
	if col.IsNull(i) {
		return nil
	}
	switch c := col.(type) {
	case *array.Int64:
		return json.Number(strconv.FormatInt(c.Value(i), 10))
	case *array.Int32:
		return json.Number(strconv.FormatInt(int64(c.Value(i)), 10))
	case *array.String:
		return c.Value(i)
	case *array.LargeString:
		return c.Value(i)
	default:
		return c.ValueStr(i)
	}
}
