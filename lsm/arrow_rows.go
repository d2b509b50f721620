package lsm

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// appendValue appends a canonical value (or null) to a column builder.
func appendValue(b array.Builder, v any) error {
	if v == nil {
		b.AppendNull()
		return nil
	}
	switch bb := b.(type) {
	case *array.BooleanBuilder:
		bb.Append(v.(bool))
	case *array.Int32Builder:
		bb.Append(v.(int32))
	case *array.Int64Builder:
		bb.Append(v.(int64))
	case *array.Float32Builder:
		bb.Append(v.(float32))
	case *array.Float64Builder:
		bb.Append(v.(float64))
	case *array.StringBuilder:
		bb.Append(v.(string))
	case *array.BinaryBuilder:
		bb.Append(v.([]byte))
	case *array.Date32Builder:
		bb.Append(arrow.Date32(v.(int32)))
	case *array.TimestampBuilder:
		bb.Append(arrow.Timestamp(v.(int64)))
	case *array.Decimal128Builder:
		d := v.(Decimal)
		if s := bb.Type().(*arrow.Decimal128Type).Scale; d.Scale != s {
			return fmt.Errorf("decimal %s has scale %d, the column %d", d, d.Scale, s)
		}
		bb.Append(d.Unscaled)
	default:
		return fmt.Errorf("no value conversion for %T", b)
	}
	return nil
}

// valueAt reads the canonical value of row i of an arrow column.
func valueAt(a arrow.Array, i int) (any, error) {
	if a.IsNull(i) {
		return nil, nil
	}
	switch x := a.(type) {
	case *array.Boolean:
		return x.Value(i), nil
	case *array.Int32:
		return x.Value(i), nil
	case *array.Int64:
		return x.Value(i), nil
	case *array.Float32:
		return x.Value(i), nil
	case *array.Float64:
		return x.Value(i), nil
	case *array.String:
		return x.Value(i), nil
	case *array.LargeString:
		return x.Value(i), nil
	case *array.Binary:
		return append([]byte(nil), x.Value(i)...), nil
	case *array.LargeBinary:
		return append([]byte(nil), x.Value(i)...), nil
	case *array.Date32:
		return int32(x.Value(i)), nil
	case *array.Timestamp:
		return int64(x.Value(i)), nil
	case *array.Decimal128:
		// pqarrow reads every Parquet DECIMAL of up to 38 digits (INT32,
		// INT64 or FIXED_LEN_BYTE_ARRAY) as decimal128 of the file's
		// precision and scale.
		return Decimal{Unscaled: x.Value(i), Scale: x.DataType().(*arrow.Decimal128Type).Scale}, nil
	}
	return nil, fmt.Errorf("unsupported arrow column type %s", a.DataType())
}

// buildRecord builds an arrow batch of rows under sc, whose fields from
// off on are the table columns; extra, when not nil, fills the other
// columns (sequence, op) of each row.
func buildRecord(sc *arrow.Schema, off int, rows []Row, extra func(b *array.RecordBuilder, row int) error) (arrow.RecordBatch, error) {
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for ri, r := range rows {
		for ci, v := range r {
			if err := appendValue(b.Field(off+ci), v); err != nil {
				return nil, fmt.Errorf("column %s: %w", sc.Field(off+ci).Name, err)
			}
		}
		if extra != nil {
			if err := extra(b, ri); err != nil {
				return nil, err
			}
		}
	}
	return b.NewRecordBatch(), nil
}
