package derive

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// Limits of the equality-delete fast path: beyond them a file is diffed
// whole instead (correct, just slower).
const (
	maxFilterKeys         = 100_000
	maxCompositeFilterKey = 1_000
)

// eqDeleteFilter returns an expression matching exactly the rows that the
// equality delete files delete, so that reading a data file with it (and
// its earlier deletes) yields just the rows these files remove, with
// iceberg-go pruning row groups by statistics. ok is false when the files
// use a type or size the filter does not cover.
func eqDeleteFilter(ctx context.Context, tbl *table.Table, snapshotID int64, schema *iceberg.Schema, files []iceberg.DataFile) (iceberg.BooleanExpression, bool, error) {
	var out iceberg.BooleanExpression = iceberg.AlwaysFalse{}
	for _, f := range files {
		e, ok, err := eqFileFilter(ctx, tbl, snapshotID, schema, f)
		if err != nil || !ok {
			return nil, ok, err
		}
		out = iceberg.NewOr(out, e)
	}
	return out, true, nil
}

func eqFileFilter(ctx context.Context, tbl *table.Table, snapshotID int64, schema *iceberg.Schema, f iceberg.DataFile) (iceberg.BooleanExpression, bool, error) {
	ids := f.EqualityFieldIDs()
	if len(ids) == 0 || f.Count() > maxFilterKeys || len(ids) > 1 && f.Count() > maxCompositeFilterKey {
		return nil, false, nil
	}
	cols := make([]int, len(ids))
	names := make([]string, len(ids))
	for i, id := range ids {
		found := false
		for _, fld := range schema.Fields() {
			if fld.ID == id {
				names[i], found = fld.Name, true
			}
		}
		if !found {
			return nil, false, nil // nested or dropped key field
		}
	}
	// Read the delete file as if it were a data file holding only the key
	// columns: iceberg-go projects them onto the snapshot schema by field
	// id, converting types as it does for data.
	scan := tbl.Scan(table.WithSnapshotID(snapshotID), table.WithSelectedFields(names...))
	proj, err := scan.Projection()
	if err != nil {
		return nil, false, fmt.Errorf("equality delete file %s: %w", f.FilePath(), err)
	}
	// The projection keeps schema order, not the order of ids.
	for i, id := range ids {
		cols[i] = slices.IndexFunc(proj.Fields(), func(fld iceberg.NestedField) bool { return fld.ID == id })
		if cols[i] < 0 {
			return nil, false, nil
		}
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("file IO: %w", err)
	}
	batches, err := readTasks(ctx, fs, scan, []table.FileScanTask{{File: f, Start: 0, Length: f.FileSizeBytes()}}, rowGroups{})
	if err != nil {
		return nil, false, fmt.Errorf("equality delete file %s: %w", f.FilePath(), err)
	}
	defer releaseAll(batches)
	if len(ids) == 1 {
		return singleKeyFilter(batches, cols[0], names[0])
	}
	var out iceberg.BooleanExpression = iceberg.AlwaysFalse{}
	for _, b := range batches {
		for r := range int(b.NumRows()) {
			var row iceberg.BooleanExpression = iceberg.AlwaysTrue{}
			for i, c := range cols {
				p, ok := equalsValue(b.Column(c), r, names[i])
				if !ok {
					return nil, false, nil
				}
				row = iceberg.NewAnd(row, p)
			}
			out = iceberg.NewOr(out, row)
		}
	}
	return out, true, nil
}

// singleKeyFilter is "name IN (values) OR name IS NULL" for the key values
// of one column.
func singleKeyFilter(batches []arrow.RecordBatch, col int, name string) (iceberg.BooleanExpression, bool, error) {
	ref := iceberg.Reference(name)
	var (
		nulls bool
		i32   []int32
		i64   []int64
		strs  []string
		dates []iceberg.Date
	)
	for _, b := range batches {
		arr := b.Column(col)
		for r := range arr.Len() {
			if arr.IsNull(r) {
				nulls = true
				continue
			}
			switch a := arr.(type) {
			case *array.Int32:
				i32 = append(i32, a.Value(r))
			case *array.Int64:
				i64 = append(i64, a.Value(r))
			case *array.String:
				// Value aliases the batch, released before the filter is used.
				strs = append(strs, strings.Clone(a.Value(r)))
			case *array.Date32:
				dates = append(dates, iceberg.Date(a.Value(r)))
			default:
				return nil, false, nil
			}
		}
	}
	var out iceberg.BooleanExpression = iceberg.AlwaysFalse{}
	switch {
	case len(i32) > 0:
		out = inRange(ref, i32)
	case len(i64) > 0:
		out = inRange(ref, i64)
	case len(strs) > 0:
		out = inRange(ref, strs)
	case len(dates) > 0:
		out = inRange(ref, dates)
	}
	if nulls {
		out = iceberg.NewOr(out, iceberg.IsNull(ref))
	}
	return out, true, nil
}

// equalsValue is "name = value" or "name IS NULL" for one key value.
func equalsValue(arr arrow.Array, r int, name string) (iceberg.BooleanExpression, bool) {
	ref := iceberg.Reference(name)
	if arr.IsNull(r) {
		return iceberg.IsNull(ref), true
	}
	switch a := arr.(type) {
	case *array.Int32:
		return iceberg.EqualTo(ref, a.Value(r)), true
	case *array.Int64:
		return iceberg.EqualTo(ref, a.Value(r)), true
	case *array.String:
		return iceberg.EqualTo(ref, strings.Clone(a.Value(r))), true
	case *array.Date32:
		return iceberg.EqualTo(ref, iceberg.Date(a.Value(r))), true
	}
	return nil, false
}

// inRange is "ref IN (vals)" with the values' range as well: statistics
// pruning gives up on long IN lists, but a range prunes row groups and
// files whatever the number of keys.
func inRange[T interface {
	iceberg.LiteralType
	cmp.Ordered
}](ref iceberg.UnboundTerm, vals []T) iceberg.BooleanExpression {
	lo, hi := slices.Min(vals), slices.Max(vals)
	return iceberg.NewAnd(
		iceberg.GreaterThanEqual(ref, lo),
		iceberg.LessThanEqual(ref, hi),
		iceberg.IsIn(ref, vals...))
}
