package derive

import (
	"encoding/binary"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// rowForm appends the bytes a row is compared by in the row diff: two rows
// are the same content when their forms are equal.
type rowForm func(dst []byte, row int) []byte

// binaryRowForm returns the compact form of a batch's rows: per column a
// null marker and the value's fixed-width bits, or its length and bytes.
// It stands for the row's JSON (what a consumer sees) only between
// batches whose columns have the same names and Arrow types (see
// sameColumns), where equal JSON means equal values. Writing it costs a
// copy of each value where JSON formats dates, timestamps and decimals
// (the diff wrote every removed row's JSON to hash it: a tenth of a cold
// read). ok is false for a column type it does not cover (nested types,
// dictionaries, extensions, and date64, whose JSON drops the time of day):
// the diff then compares rows by JSON.
func binaryRowForm(b arrow.RecordBatch) (rowForm, bool) {
	cols := make([]rowForm, b.NumCols())
	for i := range cols {
		f, ok := binaryColumnForm(b.Column(i))
		if !ok {
			return nil, false
		}
		cols[i] = f
	}
	return func(dst []byte, row int) []byte {
		for _, c := range cols {
			dst = c(dst, row)
		}
		return dst
	}, true
}

// canonicalNaN stands for every NaN, as JSON writes them all as "NaN".
const canonicalNaN = 0x7ff8000000000001

func binaryColumnForm(arr arrow.Array) (rowForm, bool) {
	value, ok := binaryValueForm(arr)
	if !ok {
		return nil, false
	}
	if arr.NullN() == 0 {
		return func(dst []byte, row int) []byte { return value(append(dst, 1), row) }, true
	}
	return func(dst []byte, row int) []byte {
		if arr.IsNull(row) {
			return append(dst, 0)
		}
		return value(append(dst, 1), row)
	}, true
}

func binaryValueForm(arr arrow.Array) (rowForm, bool) {
	le := binary.LittleEndian
	switch a := arr.(type) {
	case *array.Boolean:
		return func(dst []byte, row int) []byte {
			if a.Value(row) {
				return append(dst, 1)
			}
			return append(dst, 0)
		}, true
	case *array.Int8:
		return func(dst []byte, row int) []byte { return append(dst, byte(a.Value(row))) }, true
	case *array.Uint8:
		return func(dst []byte, row int) []byte { return append(dst, a.Value(row)) }, true
	case *array.Int16:
		return func(dst []byte, row int) []byte { return le.AppendUint16(dst, uint16(a.Value(row))) }, true
	case *array.Uint16:
		return func(dst []byte, row int) []byte { return le.AppendUint16(dst, a.Value(row)) }, true
	case *array.Int32:
		return func(dst []byte, row int) []byte { return le.AppendUint32(dst, uint32(a.Value(row))) }, true
	case *array.Uint32:
		return func(dst []byte, row int) []byte { return le.AppendUint32(dst, a.Value(row)) }, true
	case *array.Int64:
		return func(dst []byte, row int) []byte { return le.AppendUint64(dst, uint64(a.Value(row))) }, true
	case *array.Uint64:
		return func(dst []byte, row int) []byte { return le.AppendUint64(dst, a.Value(row)) }, true
	case *array.Float32:
		return func(dst []byte, row int) []byte { return le.AppendUint64(dst, floatBits(float64(a.Value(row)))) }, true
	case *array.Float64:
		return func(dst []byte, row int) []byte { return le.AppendUint64(dst, floatBits(a.Value(row))) }, true
	case *array.Decimal128:
		return func(dst []byte, row int) []byte {
			v := a.Value(row)
			return le.AppendUint64(le.AppendUint64(dst, uint64(v.HighBits())), v.LowBits())
		}, true
	case *array.Date32:
		return func(dst []byte, row int) []byte { return le.AppendUint32(dst, uint32(a.Value(row))) }, true
	case *array.Time32:
		return func(dst []byte, row int) []byte { return le.AppendUint32(dst, uint32(a.Value(row))) }, true
	case *array.Time64:
		return func(dst []byte, row int) []byte { return le.AppendUint64(dst, uint64(a.Value(row))) }, true
	case *array.Timestamp:
		return func(dst []byte, row int) []byte { return le.AppendUint64(dst, uint64(a.Value(row))) }, true
	case *array.String:
		return func(dst []byte, row int) []byte { return appendSized(dst, a.Value(row)) }, true
	case *array.LargeString:
		return func(dst []byte, row int) []byte { return appendSized(dst, a.Value(row)) }, true
	case *array.Binary:
		return func(dst []byte, row int) []byte { return appendSized(dst, a.Value(row)) }, true
	case *array.LargeBinary:
		return func(dst []byte, row int) []byte { return appendSized(dst, a.Value(row)) }, true
	case *array.FixedSizeBinary:
		if _, ext := arr.DataType().(arrow.ExtensionType); ext {
			return nil, false
		}
		return func(dst []byte, row int) []byte { return append(dst, a.Value(row)...) }, true
	}
	return nil, false
}

// floatBits is a float's bits, one NaN for all, as JSON compares them.
func floatBits(f float64) uint64 {
	if math.IsNaN(f) {
		return canonicalNaN
	}
	return math.Float64bits(f)
}

// appendSized appends a variable-length value after its length, so that
// the columns around it cannot shift into it.
func appendSized[V string | []byte](dst []byte, v V) []byte {
	return append(binary.AppendUvarint(dst, uint64(len(v))), v...)
}

// sameColumns reports whether two batches have the same column names and
// Arrow types, in order: where binary forms stand for JSON.
func sameColumns(a, b *arrow.Schema) bool {
	if a.NumFields() != b.NumFields() {
		return false
	}
	for i := range a.NumFields() {
		fa, fb := a.Field(i), b.Field(i)
		if fa.Name != fb.Name || !arrow.TypeEqual(fa.Type, fb.Type) {
			return false
		}
	}
	return true
}
