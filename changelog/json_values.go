package changelog

import (
	"encoding/base64"
	"fmt"
	"math"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
)

// appendFn appends the JSON form of one value of a column (null included).
// Appenders are built once per batch so that the per-record path is a plain
// function call on a typed array: no type switch, no reflection, no
// allocation beyond growing dst.
type appendFn func(dst []byte, row int) []byte

// newAppender returns the appender of an arrow column, writing values as
// Flink's JSON format (flink-json, timestamp-format.standard = SQL) reads
// them. Unsupported types are an error, never a silently wrong value.
func newAppender(arr arrow.Array) (appendFn, error) {
	inner, err := newValueAppender(arr)
	if err != nil {
		return nil, err
	}
	if arr.DataType().ID() == arrow.NULL {
		return inner, nil
	}
	if arr.NullN() == 0 {
		return inner, nil
	}
	return func(dst []byte, row int) []byte {
		if arr.IsNull(row) {
			return append(dst, "null"...)
		}
		return inner(dst, row)
	}, nil
}

// newValueAppender handles non-null values; newAppender adds the null check.
func newValueAppender(arr arrow.Array) (appendFn, error) {
	switch a := arr.(type) {
	case *array.Null:
		return func(dst []byte, _ int) []byte { return append(dst, "null"...) }, nil
	case *array.Boolean:
		return func(dst []byte, row int) []byte { return strconv.AppendBool(dst, a.Value(row)) }, nil
	case *array.Int8:
		return func(dst []byte, row int) []byte { return strconv.AppendInt(dst, int64(a.Value(row)), 10) }, nil
	case *array.Int16:
		return func(dst []byte, row int) []byte { return strconv.AppendInt(dst, int64(a.Value(row)), 10) }, nil
	case *array.Int32:
		return func(dst []byte, row int) []byte { return strconv.AppendInt(dst, int64(a.Value(row)), 10) }, nil
	case *array.Int64:
		return func(dst []byte, row int) []byte { return strconv.AppendInt(dst, a.Value(row), 10) }, nil
	case *array.Uint8:
		return func(dst []byte, row int) []byte { return strconv.AppendUint(dst, uint64(a.Value(row)), 10) }, nil
	case *array.Uint16:
		return func(dst []byte, row int) []byte { return strconv.AppendUint(dst, uint64(a.Value(row)), 10) }, nil
	case *array.Uint32:
		return func(dst []byte, row int) []byte { return strconv.AppendUint(dst, uint64(a.Value(row)), 10) }, nil
	case *array.Uint64:
		return func(dst []byte, row int) []byte { return strconv.AppendUint(dst, a.Value(row), 10) }, nil
	case *array.Float32:
		return func(dst []byte, row int) []byte { return appendFloat(dst, float64(a.Value(row)), 32) }, nil
	case *array.Float64:
		return func(dst []byte, row int) []byte { return appendFloat(dst, a.Value(row), 64) }, nil
	case *array.Decimal128:
		scale := a.DataType().(*arrow.Decimal128Type).Scale
		return func(dst []byte, row int) []byte {
			v := a.Value(row)
			return appendDecimal128(dst, v.HighBits(), v.LowBits(), scale)
		}, nil
	case *array.Date32:
		return func(dst []byte, row int) []byte {
			dst = append(dst, '"')
			dst = appendDate(dst, int64(a.Value(row)))
			return append(dst, '"')
		}, nil
	case *array.Date64:
		return func(dst []byte, row int) []byte {
			dst = append(dst, '"')
			dst = appendDate(dst, floorDiv(int64(a.Value(row)), msPerDay))
			return append(dst, '"')
		}, nil
	case *array.Time32:
		nanos := unitNanos(a.DataType().(*arrow.Time32Type).Unit)
		return func(dst []byte, row int) []byte {
			dst = append(dst, '"')
			dst = appendTimeOfDay(dst, int64(a.Value(row))*nanos)
			return append(dst, '"')
		}, nil
	case *array.Time64:
		nanos := unitNanos(a.DataType().(*arrow.Time64Type).Unit)
		return func(dst []byte, row int) []byte {
			dst = append(dst, '"')
			dst = appendTimeOfDay(dst, int64(a.Value(row))*nanos)
			return append(dst, '"')
		}, nil
	case *array.Timestamp:
		tt := a.DataType().(*arrow.TimestampType)
		unit := tt.Unit
		// A zone on the arrow type means an instant (Iceberg timestamptz,
		// Flink TIMESTAMP_LTZ), written in UTC with a trailing Z.
		withZone := tt.TimeZone != ""
		return func(dst []byte, row int) []byte {
			dst = append(dst, '"')
			dst = appendTimestamp(dst, int64(a.Value(row)), unit)
			if withZone {
				dst = append(dst, 'Z')
			}
			return append(dst, '"')
		}, nil
	case *array.String:
		return func(dst []byte, row int) []byte { return appendJSONString(dst, a.Value(row)) }, nil
	case *array.LargeString:
		return func(dst []byte, row int) []byte { return appendJSONString(dst, a.Value(row)) }, nil
	case *array.StringView:
		return func(dst []byte, row int) []byte { return appendJSONString(dst, a.Value(row)) }, nil
	case *array.Binary:
		return func(dst []byte, row int) []byte { return appendBase64(dst, a.Value(row)) }, nil
	case *array.LargeBinary:
		return func(dst []byte, row int) []byte { return appendBase64(dst, a.Value(row)) }, nil
	case *array.BinaryView:
		return func(dst []byte, row int) []byte { return appendBase64(dst, a.Value(row)) }, nil
	case *extensions.UUIDArray:
		st, ok := a.Storage().(*array.FixedSizeBinary)
		if !ok {
			return nil, fmt.Errorf("uuid column stored as %s, want fixed_size_binary[16]", a.Storage().DataType())
		}
		return func(dst []byte, row int) []byte { return appendUUID(dst, st.Value(row)) }, nil
	case *array.FixedSizeBinary:
		return func(dst []byte, row int) []byte { return appendBase64(dst, a.Value(row)) }, nil
	case *array.Struct:
		return newStructAppender(a)
	case *array.Map:
		return newMapAppender(a)
	case *array.List:
		return newListAppender(a.ListValues(), a.ValueOffsets)
	case *array.LargeList:
		return newListAppender(a.ListValues(), a.ValueOffsets)
	case *array.FixedSizeList:
		return newListAppender(a.ListValues(), a.ValueOffsets)
	case *array.Dictionary:
		values, err := newAppender(a.Dictionary())
		if err != nil {
			return nil, err
		}
		return func(dst []byte, row int) []byte { return values(dst, a.GetValueIndex(row)) }, nil
	}
	return nil, fmt.Errorf("JSON encoding of arrow type %s is not supported", arr.DataType())
}

// appendFloat writes a JSON number, or the strings Flink parses for the
// values JSON numbers cannot hold.
func appendFloat(dst []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(dst, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(dst, `"-Infinity"`...)
	}
	// Same choice as encoding/json: plain notation in the usual range,
	// exponent outside it; both are JSON numbers Jackson reads exactly.
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (bits == 64 && (abs < 1e-6 || abs >= 1e21) || bits == 32 && (float32(abs) < 1e-6 || float32(abs) >= 1e21)) {
		format = 'e'
	}
	return strconv.AppendFloat(dst, f, format, -1, bits)
}

func appendBase64(dst, b []byte) []byte {
	dst = append(dst, '"')
	dst = base64.StdEncoding.AppendEncode(dst, b)
	return append(dst, '"')
}

const hexDigits = "0123456789abcdef"

// appendUUID writes the canonical 8-4-4-4-12 form.
func appendUUID(dst, b []byte) []byte {
	if len(b) != 16 {
		return appendBase64(dst, b)
	}
	dst = append(dst, '"')
	for i, c := range b {
		if i == 4 || i == 6 || i == 8 || i == 10 {
			dst = append(dst, '-')
		}
		dst = append(dst, hexDigits[c>>4], hexDigits[c&0xf])
	}
	return append(dst, '"')
}

// newStructAppender writes a struct as an object of its fields.
func newStructAppender(a *array.Struct) (appendFn, error) {
	st := a.DataType().(*arrow.StructType)
	names := make([][]byte, st.NumFields())
	fields := make([]appendFn, st.NumFields())
	for i := range fields {
		var err error
		if fields[i], err = newAppender(a.Field(i)); err != nil {
			return nil, fmt.Errorf("field %s: %w", st.Field(i).Name, err)
		}
		names[i] = appendObjectKey(nil, i == 0, st.Field(i).Name)
	}
	return objectOf(names, fields), nil
}

// objectOf writes an object of fields, each after its rendered key
// (appendObjectKey).
func objectOf(keys [][]byte, fields []appendFn) appendFn {
	return func(dst []byte, row int) []byte {
		dst = append(dst, '{')
		for i, f := range fields {
			dst = append(dst, keys[i]...)
			dst = f(dst, row)
		}
		return append(dst, '}')
	}
}

// appendObjectKey renders `"name":` (with a leading comma unless first) once,
// so per-record encoding only copies bytes.
func appendObjectKey(dst []byte, first bool, name string) []byte {
	if !first {
		dst = append(dst, ',')
	}
	dst = appendJSONString(dst, name)
	return append(dst, ':')
}

// newListAppender writes lists as arrays; offsets gives [start, end) of
// a row's elements in values.
func newListAppender[T int32 | int64](values arrow.Array, offsets func(int) (T, T)) (appendFn, error) {
	elem, err := newAppender(values)
	if err != nil {
		return nil, fmt.Errorf("list element: %w", err)
	}
	return listOf(elem, offsets), nil
}

// listOf writes the elements [start, end) of a row, as bounds gives them,
// with elem.
func listOf[T int32 | int64](elem appendFn, bounds func(int) (T, T)) appendFn {
	return func(dst []byte, row int) []byte {
		start, end := bounds(row)
		dst = append(dst, '[')
		for i := start; i < end; i++ {
			if i > start {
				dst = append(dst, ',')
			}
			dst = elem(dst, int(i))
		}
		return append(dst, ']')
	}
}

// newMapAppender writes a map with string keys as a JSON object and any
// other map as an array of {"key":...,"value":...} objects, since JSON object
// keys can only be strings.
func newMapAppender(a *array.Map) (appendFn, error) {
	itemFn, err := newAppender(a.Items())
	if err != nil {
		return nil, fmt.Errorf("map value: %w", err)
	}
	keyFn, err := newAppender(a.Keys())
	if err != nil {
		return nil, fmt.Errorf("map key: %w", err)
	}
	return mapAppender(a, keyFn, itemFn), nil
}

// mapAppender writes the entries of a with keyFn and itemFn.
func mapAppender(a *array.Map, keyFn, itemFn appendFn) appendFn {
	switch a.Keys().DataType().ID() {
	case arrow.STRING, arrow.LARGE_STRING, arrow.STRING_VIEW:
		return func(dst []byte, row int) []byte {
			start, end := a.ValueOffsets(row)
			dst = append(dst, '{')
			for i := start; i < end; i++ {
				if i > start {
					dst = append(dst, ',')
				}
				dst = keyFn(dst, int(i))
				dst = append(dst, ':')
				dst = itemFn(dst, int(i))
			}
			return append(dst, '}')
		}
	}
	return func(dst []byte, row int) []byte {
		start, end := a.ValueOffsets(row)
		dst = append(dst, '[')
		for i := start; i < end; i++ {
			if i > start {
				dst = append(dst, ',')
			}
			dst = append(dst, `{"key":`...)
			dst = keyFn(dst, int(i))
			dst = append(dst, `,"value":`...)
			dst = itemFn(dst, int(i))
			dst = append(dst, '}')
		}
		return append(dst, ']')
	}
}
