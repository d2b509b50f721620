package quickstart

import (
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// ordersToRecord builds one Arrow batch of orders in the given schema, which
// is the table schema converted by iceberg-go (so it carries the Parquet field
// ids WriteRecords matches on). Columns are looked up by name so the codec
// does not depend on the column order of the schema.
func ordersToRecord(sc *arrow.Schema, orders []Order) (arrow.RecordBatch, error) {
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()

	for i, f := range sc.Fields() {
		fb := b.Field(i)
		for _, o := range orders {
			if err := appendOrderField(fb, f.Name, o); err != nil {
				return nil, fmt.Errorf("column %s of order %d: %w", f.Name, o.OrderID, err)
			}
		}
	}
	return b.NewRecordBatch(), nil
}

// stringAppender covers both String and LargeString builders: iceberg-go
// picks between them by option, and the demo must not care which.
type stringAppender interface{ Append(string) }

func appendOrderField(fb array.Builder, name string, o Order) error {
	switch name {
	case colOrderID:
		return appendAs(fb, func(b *array.Int64Builder) { b.Append(o.OrderID) })
	case colCustomer:
		return appendString(fb, o.Customer)
	case colProduct:
		return appendString(fb, o.Product)
	case colStatus:
		return appendString(fb, o.Status)
	case colAmount:
		return appendAs(fb, func(b *array.Decimal128Builder) { b.Append(decimal128.FromI64(o.AmountCents)) })
	case colQuantity:
		return appendAs(fb, func(b *array.Int32Builder) { b.Append(o.Quantity) })
	case colCreatedAt:
		return appendAs(fb, func(b *array.TimestampBuilder) { b.Append(arrow.Timestamp(o.CreatedAt.UnixMicro())) })
	case colUpdatedAt:
		return appendAs(fb, func(b *array.TimestampBuilder) { b.Append(arrow.Timestamp(o.UpdatedAt.UnixMicro())) })
	case colNote:
		if o.Note == nil {
			fb.AppendNull()
			return nil
		}
		return appendString(fb, *o.Note)
	default:
		return fmt.Errorf("unknown column")
	}
}

func appendAs[B any](fb array.Builder, fn func(B)) error {
	b, ok := fb.(B)
	if !ok {
		return fmt.Errorf("unexpected builder %T", fb)
	}
	fn(b)
	return nil
}

func appendString(fb array.Builder, s string) error {
	b, ok := fb.(stringAppender)
	if !ok {
		return fmt.Errorf("unexpected builder %T for a string column", fb)
	}
	b.Append(s)
	return nil
}

// recordToOrders decodes a batch read back from the table. Missing columns
// are left at their zero value, which lets callers project only order_id.
func recordToOrders(rec arrow.RecordBatch) ([]Order, error) {
	out := make([]Order, rec.NumRows())
	for i, f := range rec.Schema().Fields() {
		col := rec.Column(i)
		for r := range out {
			if err := setOrderField(&out[r], f.Name, col, r); err != nil {
				return nil, fmt.Errorf("column %s row %d: %w", f.Name, r, err)
			}
		}
	}
	return out, nil
}

// stringValuer covers both String and LargeString arrays.
type stringValuer interface{ Value(int) string }

func setOrderField(o *Order, name string, col arrow.Array, r int) error {
	if col.IsNull(r) {
		if name == colNote {
			o.Note = nil
			return nil
		}
		return fmt.Errorf("null in a required column")
	}
	var err error
	switch name {
	case colOrderID:
		o.OrderID, err = valueAs(col, r, (*array.Int64).Value)
	case colCustomer:
		o.Customer, err = stringAt(col, r)
	case colProduct:
		o.Product, err = stringAt(col, r)
	case colStatus:
		o.Status, err = stringAt(col, r)
	case colAmount:
		var n decimal128.Num
		n, err = valueAs(col, r, (*array.Decimal128).Value)
		o.AmountCents = n.BigInt().Int64()
	case colQuantity:
		o.Quantity, err = valueAs(col, r, (*array.Int32).Value)
	case colCreatedAt:
		o.CreatedAt, err = timestampAt(col, r)
	case colUpdatedAt:
		o.UpdatedAt, err = timestampAt(col, r)
	case colNote:
		var s string
		s, err = stringAt(col, r)
		o.Note = &s
	}
	// Columns the demo does not know (added by someone else's schema change)
	// are ignored: the model only tracks the columns it writes.
	return err
}

func valueAs[A any, V any](col arrow.Array, r int, get func(A, int) V) (V, error) {
	a, ok := col.(A)
	if !ok {
		var zero V
		return zero, fmt.Errorf("unexpected array %T", col)
	}
	return get(a, r), nil
}

func stringAt(col arrow.Array, r int) (string, error) {
	a, ok := col.(stringValuer)
	if !ok {
		return "", fmt.Errorf("unexpected array %T for a string column", col)
	}
	return a.Value(r), nil
}

// timestampAt reads microseconds and returns UTC, so values compare equal to
// the ones the demo wrote regardless of the reader's time zone.
func timestampAt(col arrow.Array, r int) (time.Time, error) {
	a, ok := col.(*array.Timestamp)
	if !ok {
		return time.Time{}, fmt.Errorf("unexpected array %T for a timestamp column", col)
	}
	unit := a.DataType().(*arrow.TimestampType).Unit
	return a.Value(r).ToTime(unit).UTC(), nil
}
