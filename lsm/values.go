package lsm

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/apache/iceberg-go"
)

// kind is the Go representation of a supported column type. LSM tables take
// primitive columns only: the values are merged, compared, hashed and
// looked up by key in Go.
type kind uint8

const (
	kBool kind = iota + 1
	kInt32
	kInt64
	kFloat32
	kFloat64
	kString
	kBinary
	kDate        // int32 days since the epoch
	kTimestamp   // int64 microseconds, no zone
	kTimestampTz // int64 microseconds, UTC
	kDecimal     // Decimal, at the column's scale (decimal.go)
)

// Row is one row of an LSM table, one value per top-level column of the
// schema, in order; nil is SQL null. Values are bool, int32, int64,
// float32, float64, string, []byte (binary), int32 (date, days), int64
// (timestamps, microseconds) and Decimal.
type Row []any

func kindOf(t iceberg.Type) (kind, error) {
	switch t.(type) {
	case iceberg.BooleanType:
		return kBool, nil
	case iceberg.Int32Type:
		return kInt32, nil
	case iceberg.Int64Type:
		return kInt64, nil
	case iceberg.Float32Type:
		return kFloat32, nil
	case iceberg.Float64Type:
		return kFloat64, nil
	case iceberg.StringType:
		return kString, nil
	case iceberg.BinaryType:
		return kBinary, nil
	case iceberg.DateType:
		return kDate, nil
	case iceberg.TimestampType:
		return kTimestamp, nil
	case iceberg.TimestampTzType:
		return kTimestampTz, nil
	case iceberg.DecimalType:
		return kDecimal, nil
	}
	return 0, fmt.Errorf("column type %s is not supported by lakegw LSM tables (boolean, int, long, float, double, string, binary, date, timestamp, timestamptz, decimal(P, S) are)", t)
}

// coerce converts an input value (Go native, or as decoded from JSON or
// CSV text) to the column's canonical representation; dec is the type of
// a decimal column.
func coerce(v any, k kind, dec decType) (any, error) {
	if v == nil {
		return nil, nil
	}
	if k == kDecimal {
		return coerceDecimal(v, dec)
	}
	if n, ok := v.(json.Number); ok {
		v = string(n)
		if k == kString {
			return string(n), nil
		}
	}
	switch k {
	case kBool:
		switch x := v.(type) {
		case bool:
			return x, nil
		case string:
			return strconv.ParseBool(x)
		}
	case kInt32, kDate:
		if k == kDate {
			if s, ok := v.(string); ok {
				if d, err := time.Parse(time.DateOnly, s); err == nil {
					return int32(d.Unix() / 86400), nil
				}
			}
		}
		i, err := toInt(v)
		if err != nil {
			return nil, err
		}
		if i < math.MinInt32 || i > math.MaxInt32 {
			return nil, fmt.Errorf("%d overflows int", i)
		}
		return int32(i), nil
	case kInt64, kTimestamp, kTimestampTz:
		if k != kInt64 {
			if s, ok := v.(string); ok {
				for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999", "2006-01-02 15:04:05.999999"} {
					if ts, err := time.Parse(layout, s); err == nil {
						return ts.UnixMicro(), nil
					}
				}
			}
			if ts, ok := v.(time.Time); ok {
				return ts.UnixMicro(), nil
			}
		}
		return toInt(v)
	case kFloat32:
		f, err := toFloat(v)
		return float32(f), err
	case kFloat64:
		return toFloat(v)
	case kString:
		if s, ok := v.(string); ok {
			return s, nil
		}
	case kBinary:
		switch x := v.(type) {
		case []byte:
			return bytes.Clone(x), nil
		case string:
			return base64.StdEncoding.DecodeString(x)
		}
	}
	return nil, fmt.Errorf("cannot use %T %v", v, v)
}

func toInt(v any) (int64, error) {
	switch x := v.(type) {
	case int:
		return int64(x), nil
	case int32:
		return int64(x), nil
	case int64:
		return x, nil
	case float64:
		if x != math.Trunc(x) || math.Abs(x) > 1<<53 {
			return 0, fmt.Errorf("%v is not an integer", x)
		}
		return int64(x), nil
	case string:
		return strconv.ParseInt(x, 10, 64)
	}
	return 0, fmt.Errorf("cannot use %T %v as an integer", v, v)
}

func toFloat(v any) (float64, error) {
	switch x := v.(type) {
	case float64:
		return x, nil
	case float32:
		return float64(x), nil
	case int:
		return float64(x), nil
	case int32:
		return float64(x), nil
	case int64:
		return float64(x), nil
	case string:
		return strconv.ParseFloat(x, 64)
	}
	return 0, fmt.Errorf("cannot use %T %v as a number", v, v)
}

// equalValues compares two canonical values of one column.
func equalValues(a, b any) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	if x, ok := a.([]byte); ok {
		y, ok := b.([]byte)
		return ok && bytes.Equal(x, y)
	}
	return a == b
}

// compareValues orders two non-null canonical values of one column.
func compareValues(a, b any) int {
	switch x := a.(type) {
	case bool:
		y := b.(bool)
		switch {
		case x == y:
			return 0
		case !x:
			return -1
		}
		return 1
	case int32:
		return cmp3(x, b.(int32))
	case int64:
		return cmp3(x, b.(int64))
	case float32:
		return cmp3(x, b.(float32))
	case float64:
		return cmp3(x, b.(float64))
	case string:
		return cmp3(x, b.(string))
	case []byte:
		return bytes.Compare(x, b.([]byte))
	case Decimal:
		// One column, one scale: the unscaled values order as the values.
		return x.Unscaled.Cmp(b.(Decimal).Unscaled)
	}
	return 0
}

func cmp3[T int32 | int64 | float32 | float64 | string](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// appendKeyPart appends a memcomparable encoding of a non-null key value:
// byte strings of encoded keys order as the values do, column by column,
// so that sorted runs can be sorted and searched by plain byte comparison.
func appendKeyPart(dst []byte, v any) []byte {
	switch x := v.(type) {
	case bool:
		if x {
			return append(dst, 1)
		}
		return append(dst, 0)
	case int32:
		return binary.BigEndian.AppendUint32(dst, uint32(x)^(1<<31))
	case int64:
		return binary.BigEndian.AppendUint64(dst, uint64(x)^(1<<63))
	case float32:
		u := math.Float32bits(x)
		if u>>31 == 1 {
			u = ^u
		} else {
			u ^= 1 << 31
		}
		return binary.BigEndian.AppendUint32(dst, u)
	case float64:
		u := math.Float64bits(x)
		if u>>63 == 1 {
			u = ^u
		} else {
			u ^= 1 << 63
		}
		return binary.BigEndian.AppendUint64(dst, u)
	case string:
		return appendEscaped(dst, []byte(x))
	case []byte:
		return appendEscaped(dst, x)
	case Decimal:
		// The unscaled value as a 128-bit integer, sign bit flipped as
		// for ints; every value of a column has the column's scale.
		b := decimalBE16(x.Unscaled)
		b[0] ^= 0x80
		return append(dst, b[:]...)
	}
	return dst
}

// appendEscaped writes b with 0x00 escaped as 0x00 0xff and a 0x00 0x01
// terminator, so that a shorter string sorts first and composite keys do
// not run into each other.
func appendEscaped(dst, b []byte) []byte {
	for _, c := range b {
		if c == 0 {
			dst = append(dst, 0, 0xff)
		} else {
			dst = append(dst, c)
		}
	}
	return append(dst, 0, 1)
}

// decodeBound decodes an Iceberg single-value binary bound (manifest
// lower/upper bounds) into the canonical value of a column kind; dec is
// the type of a decimal column.
func decodeBound(b []byte, k kind, dec decType) (any, bool) {
	switch k {
	case kBool:
		if len(b) == 1 {
			return b[0] != 0, true
		}
	case kInt32, kDate:
		if len(b) == 4 {
			return int32(binary.LittleEndian.Uint32(b)), true
		}
	case kInt64, kTimestamp, kTimestampTz:
		if len(b) == 8 {
			return int64(binary.LittleEndian.Uint64(b)), true
		}
	case kFloat32:
		if len(b) == 4 {
			return math.Float32frombits(binary.LittleEndian.Uint32(b)), true
		}
	case kFloat64:
		if len(b) == 8 {
			return math.Float64frombits(binary.LittleEndian.Uint64(b)), true
		}
	case kString:
		return string(b), true
	case kBinary:
		return bytes.Clone(b), true
	case kDecimal:
		// The unscaled value, big-endian two's complement, fewest bytes.
		if n, ok := decimalFromBE(b); ok {
			return Decimal{Unscaled: n, Scale: dec.scale}, true
		}
	}
	return nil, false
}
