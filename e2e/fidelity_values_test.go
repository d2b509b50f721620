package e2e

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/iceberg-go"
	"github.com/google/uuid"
)

// The fidelity harness compares rows as canonical strings, one per column,
// built from the column's Iceberg type on both sides: from the JSON that
// lakegw sends (decoded with UseNumber, never through lakegw's code) and
// from the Arrow arrays of an iceberg-go scan. Equal values of one Iceberg
// type have one canonical form whatever their encoding:
//
//	boolean          true / false
//	int, long        decimal integer
//	float            shortest decimal that round-trips to the float32
//	double           shortest decimal that round-trips to the float64
//	decimal(P,S)     the exact value with S fraction digits (a value that
//	                 needs more digits shows as a fraction p/q and mismatches)
//	date             yyyy-MM-dd
//	time             HH:mm:ss.ffffff
//	timestamp        yyyy-MM-ddTHH:mm:ss.ffffff (ns for timestamp_ns)
//	timestamptz      the same with a trailing Z
//	string           Go-quoted
//	uuid             8-4-4-4-12 lowercase hex
//	binary, fixed    0x + hex
//	struct           {name: value, ...} in field order
//	list             [value, ...]
//	map              {key => value, ...} sorted by key
//	null             null

const fidNull = "null"

// fidSchema is the top-level columns of one snapshot's schema.
type fidSchema struct {
	schema *iceberg.Schema
	fields []iceberg.NestedField
	ids    []int // identifier field positions in fields
}

func newFidSchema(s *iceberg.Schema) *fidSchema {
	rs := &fidSchema{schema: s, fields: s.Fields()}
	for _, id := range s.IdentifierFieldIDs {
		for i, f := range rs.fields {
			if f.ID == id {
				rs.ids = append(rs.ids, i)
			}
		}
	}
	return rs
}

// fidRow is the canonical values of one row, aligned with fidSchema.fields.
type fidRow []string

func (r fidRow) key() string { return strings.Join(r, "\x1f") }

func (rs *fidSchema) render(r fidRow) string {
	var b strings.Builder
	b.WriteByte('{')
	for i, f := range rs.fields {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(f.Name)
		b.WriteByte('=')
		b.WriteString(r[i])
	}
	b.WriteByte('}')
	return b.String()
}

// identity is the identifier-field values of a fidRow ("" when the schema has
// no identifier fields).
func (rs *fidSchema) identity(r fidRow) string {
	if len(rs.ids) == 0 {
		return ""
	}
	parts := make([]string, len(rs.ids))
	for i, p := range rs.ids {
		parts[i] = r[p]
	}
	return strings.Join(parts, "\x1f")
}

func canonFloat32(f float32) string {
	switch {
	case math.IsNaN(float64(f)):
		return "NaN"
	case math.IsInf(float64(f), 1):
		return "Infinity"
	case math.IsInf(float64(f), -1):
		return "-Infinity"
	}
	return strconv.FormatFloat(float64(f), 'g', -1, 32)
}

func canonFloat64(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

func canonDecimal(r *big.Rat, scale int) string {
	pow := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)
	if new(big.Int).Mod(pow, r.Denom()).Sign() == 0 {
		return r.FloatString(scale)
	}
	return r.RatString() // more fraction digits than the type has: never equal
}

func canonDate(days int64) string {
	return time.Unix(days*86400, 0).UTC().Format("2006-01-02")
}

func canonTime(micros int64) string {
	return time.UnixMicro(micros).UTC().Format("15:04:05.000000")
}

func canonTimestamp(v int64, nanos, zone bool) string {
	var t time.Time
	layout := "2006-01-02T15:04:05.000000"
	if nanos {
		t = time.Unix(0, v).UTC()
		layout = "2006-01-02T15:04:05.000000000"
	} else {
		t = time.UnixMicro(v).UTC()
	}
	s := t.Format(layout)
	if zone {
		s += "Z"
	}
	return s
}

func canonBytes(b []byte) string { return "0x" + hex.EncodeToString(b) }

func canonUUID(b []byte) (string, error) {
	u, err := uuid.FromBytes(b)
	if err != nil {
		return "", err
	}
	return u.String(), nil
}

// ---------------------------------------------------------------------------
// JSON side

// jsonRow canonicalises a before/after object of a record value.
func (rs *fidSchema) jsonRow(obj map[string]any) (fidRow, error) {
	out := make(fidRow, len(rs.fields))
	for i, f := range rs.fields {
		v, ok := obj[f.Name]
		if !ok {
			return nil, fmt.Errorf("column %q is missing", f.Name)
		}
		c, err := fidJSONValue(v, f.Type)
		if err != nil {
			return nil, fmt.Errorf("column %q (%s): %w", f.Name, f.Type, err)
		}
		out[i] = c
	}
	if len(obj) != len(rs.fields) {
		for k := range obj {
			if !slices.ContainsFunc(rs.fields, func(f iceberg.NestedField) bool { return f.Name == k }) {
				return nil, fmt.Errorf("column %q is not in the snapshot's schema", k)
			}
		}
	}
	return out, nil
}

func fidJSONValue(v any, typ iceberg.Type) (string, error) {
	if v == nil {
		return fidNull, nil
	}
	str := func() (string, error) {
		s, ok := v.(string)
		if !ok {
			return "", fmt.Errorf("want a JSON string, got %T %v", v, v)
		}
		return s, nil
	}
	num := func() (string, error) {
		n, ok := v.(json.Number)
		if !ok {
			return "", fmt.Errorf("want a JSON number, got %T %v", v, v)
		}
		return string(n), nil
	}
	switch t := typ.(type) {
	case iceberg.BooleanType:
		b, ok := v.(bool)
		if !ok {
			return "", fmt.Errorf("want a JSON boolean, got %T %v", v, v)
		}
		return strconv.FormatBool(b), nil
	case iceberg.Int32Type, iceberg.Int64Type:
		n, err := num()
		if err != nil {
			return "", err
		}
		bits := 64
		if _, ok := t.(iceberg.Int32Type); ok {
			bits = 32
		}
		i, err := strconv.ParseInt(n, 10, bits)
		if err != nil {
			return "", err
		}
		return strconv.FormatInt(i, 10), nil
	case iceberg.Float32Type, iceberg.Float64Type:
		bits := 64
		if _, ok := t.(iceberg.Float32Type); ok {
			bits = 32
		}
		var text string
		switch x := v.(type) {
		case json.Number:
			text = string(x)
		case string:
			if x != "NaN" && x != "Infinity" && x != "-Infinity" {
				return "", fmt.Errorf("float string %q", x)
			}
			text = strings.Replace(x, "Infinity", "Inf", 1)
		default:
			return "", fmt.Errorf("want a JSON number, got %T %v", v, v)
		}
		f, err := strconv.ParseFloat(text, bits)
		if err != nil {
			return "", err
		}
		if bits == 32 {
			return canonFloat32(float32(f)), nil
		}
		return canonFloat64(f), nil
	case iceberg.DecimalType:
		n, err := num()
		if err != nil {
			return "", err
		}
		r, ok := new(big.Rat).SetString(n)
		if !ok {
			return "", fmt.Errorf("decimal %q", n)
		}
		return canonDecimal(r, t.Scale()), nil
	case iceberg.DateType:
		s, err := str()
		if err != nil {
			return "", err
		}
		d, err := time.Parse("2006-01-02", s)
		if err != nil {
			return "", err
		}
		return canonDate(d.Unix() / 86400), nil
	case iceberg.TimeType:
		s, err := str()
		if err != nil {
			return "", err
		}
		d, err := time.Parse("15:04:05.999999999", s)
		if err != nil {
			return "", err
		}
		return canonTime(int64(d.Hour())*3_600_000_000 + int64(d.Minute())*60_000_000 + int64(d.Second())*1_000_000 + int64(d.Nanosecond()/1000)), nil
	case iceberg.TimestampType, iceberg.TimestampTzType, iceberg.TimestampNsType, iceberg.TimestampTzNsType:
		s, err := str()
		if err != nil {
			return "", err
		}
		zone := false
		nanos := false
		switch t.(type) {
		case iceberg.TimestampTzType:
			zone = true
		case iceberg.TimestampNsType:
			nanos = true
		case iceberg.TimestampTzNsType:
			zone, nanos = true, true
		}
		if zone {
			if !strings.HasSuffix(s, "Z") {
				return "", fmt.Errorf("timestamptz %q has no trailing Z", s)
			}
			s = strings.TrimSuffix(s, "Z")
		}
		ts, err := time.Parse("2006-01-02 15:04:05.999999999", s)
		if err != nil {
			return "", fmt.Errorf("want yyyy-MM-dd HH:mm:ss[.f]: %w", err)
		}
		if nanos {
			return canonTimestamp(ts.UnixNano(), true, zone), nil
		}
		return canonTimestamp(ts.UnixMicro(), false, zone), nil
	case iceberg.StringType:
		s, err := str()
		if err != nil {
			return "", err
		}
		return strconv.Quote(s), nil
	case iceberg.UUIDType:
		s, err := str()
		if err != nil {
			return "", err
		}
		u, err := uuid.Parse(s)
		if err != nil || len(s) != 36 {
			return "", fmt.Errorf("uuid %q: want 8-4-4-4-12 (%v)", s, err)
		}
		return u.String(), nil
	case iceberg.BinaryType, iceberg.FixedType:
		s, err := str()
		if err != nil {
			return "", err
		}
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			return "", fmt.Errorf("base64: %w", err)
		}
		if f, ok := t.(iceberg.FixedType); ok && len(b) != f.Len() {
			return "", fmt.Errorf("fixed[%d] value of %d bytes", f.Len(), len(b))
		}
		return canonBytes(b), nil
	case *iceberg.StructType:
		obj, ok := v.(map[string]any)
		if !ok {
			return "", fmt.Errorf("want a JSON object, got %T", v)
		}
		if len(obj) != len(t.FieldList) {
			return "", fmt.Errorf("struct with %d fields, want %d", len(obj), len(t.FieldList))
		}
		parts := make([]string, len(t.FieldList))
		for i, f := range t.FieldList {
			fv, ok := obj[f.Name]
			if !ok {
				return "", fmt.Errorf("struct field %q is missing", f.Name)
			}
			c, err := fidJSONValue(fv, f.Type)
			if err != nil {
				return "", fmt.Errorf("struct field %q: %w", f.Name, err)
			}
			parts[i] = f.Name + ": " + c
		}
		return "{" + strings.Join(parts, ", ") + "}", nil
	case *iceberg.ListType:
		arr, ok := v.([]any)
		if !ok {
			return "", fmt.Errorf("want a JSON array, got %T", v)
		}
		parts := make([]string, len(arr))
		for i, e := range arr {
			c, err := fidJSONValue(e, t.Element)
			if err != nil {
				return "", fmt.Errorf("list element %d: %w", i, err)
			}
			parts[i] = c
		}
		return "[" + strings.Join(parts, ", ") + "]", nil
	case *iceberg.MapType:
		var parts []string
		if _, ok := t.KeyType.(iceberg.StringType); ok {
			obj, ok := v.(map[string]any)
			if !ok {
				return "", fmt.Errorf("want a JSON object for a map with string keys, got %T", v)
			}
			for k, e := range obj {
				c, err := fidJSONValue(e, t.ValueType)
				if err != nil {
					return "", fmt.Errorf("map value of %q: %w", k, err)
				}
				parts = append(parts, strconv.Quote(k)+" => "+c)
			}
		} else {
			arr, ok := v.([]any)
			if !ok {
				return "", fmt.Errorf("want a JSON array of {key, value} for a map, got %T", v)
			}
			for i, e := range arr {
				kv, ok := e.(map[string]any)
				if !ok || len(kv) != 2 {
					return "", fmt.Errorf("map entry %d: want {key, value}, got %v", i, e)
				}
				k, err := fidJSONValue(kv["key"], t.KeyType)
				if err != nil {
					return "", fmt.Errorf("map key %d: %w", i, err)
				}
				c, err := fidJSONValue(kv["value"], t.ValueType)
				if err != nil {
					return "", fmt.Errorf("map value %d: %w", i, err)
				}
				parts = append(parts, k+" => "+c)
			}
		}
		slices.Sort(parts)
		return "{" + strings.Join(parts, ", ") + "}", nil
	}
	return "", fmt.Errorf("the harness does not know Iceberg type %s", typ)
}

// ---------------------------------------------------------------------------
// Arrow side

// fidArrowValue canonicalises value i of an iceberg-go scan's column.
func fidArrowValue(arr arrow.Array, i int, typ iceberg.Type) (string, error) {
	if d, ok := arr.(*array.Dictionary); ok {
		if d.IsNull(i) {
			return fidNull, nil
		}
		return fidArrowValue(d.Dictionary(), d.GetValueIndex(i), typ)
	}
	if arr.IsNull(i) {
		return fidNull, nil
	}
	bad := func() (string, error) {
		return "", fmt.Errorf("arrow %s for Iceberg %s", arr.DataType(), typ)
	}
	switch t := typ.(type) {
	case iceberg.BooleanType:
		a, ok := arr.(*array.Boolean)
		if !ok {
			return bad()
		}
		return strconv.FormatBool(a.Value(i)), nil
	case iceberg.Int32Type, iceberg.Int64Type:
		switch a := arr.(type) {
		case *array.Int32:
			return strconv.FormatInt(int64(a.Value(i)), 10), nil
		case *array.Int64:
			return strconv.FormatInt(a.Value(i), 10), nil
		case *array.Int16:
			return strconv.FormatInt(int64(a.Value(i)), 10), nil
		case *array.Int8:
			return strconv.FormatInt(int64(a.Value(i)), 10), nil
		}
		return bad()
	case iceberg.Float32Type:
		a, ok := arr.(*array.Float32)
		if !ok {
			return bad()
		}
		return canonFloat32(a.Value(i)), nil
	case iceberg.Float64Type:
		switch a := arr.(type) {
		case *array.Float64:
			return canonFloat64(a.Value(i)), nil
		case *array.Float32:
			return canonFloat64(float64(a.Value(i))), nil
		}
		return bad()
	case iceberg.DecimalType:
		switch a := arr.(type) {
		case *array.Decimal128:
			scale := a.DataType().(*arrow.Decimal128Type).Scale
			return canonDecimal(new(big.Rat).SetFrac(a.Value(i).BigInt(), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)), t.Scale()), nil
		case *array.Decimal64:
			scale := a.DataType().(*arrow.Decimal64Type).Scale
			return canonDecimal(new(big.Rat).SetFrac(big.NewInt(int64(a.Value(i))), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)), t.Scale()), nil
		case *array.Decimal32:
			scale := a.DataType().(*arrow.Decimal32Type).Scale
			return canonDecimal(new(big.Rat).SetFrac(big.NewInt(int64(a.Value(i))), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)), t.Scale()), nil
		}
		return bad()
	case iceberg.DateType:
		a, ok := arr.(*array.Date32)
		if !ok {
			return bad()
		}
		return canonDate(int64(a.Value(i))), nil
	case iceberg.TimeType:
		a, ok := arr.(*array.Time64)
		if !ok {
			return bad()
		}
		v := int64(a.Value(i))
		if a.DataType().(*arrow.Time64Type).Unit == arrow.Nanosecond {
			v /= 1000
		}
		return canonTime(v), nil
	case iceberg.TimestampType, iceberg.TimestampTzType, iceberg.TimestampNsType, iceberg.TimestampTzNsType:
		a, ok := arr.(*array.Timestamp)
		if !ok {
			return bad()
		}
		tt := a.DataType().(*arrow.TimestampType)
		v := int64(a.Value(i))
		var zone, nanos bool
		switch t.(type) {
		case iceberg.TimestampTzType:
			zone = true
		case iceberg.TimestampNsType:
			nanos = true
		case iceberg.TimestampTzNsType:
			zone, nanos = true, true
		}
		if (tt.TimeZone != "") != zone {
			return "", fmt.Errorf("arrow %s for Iceberg %s: zone mismatch", tt, typ)
		}
		want := arrow.Microsecond
		if nanos {
			want = arrow.Nanosecond
		}
		switch {
		case tt.Unit == want:
		case tt.Unit == arrow.Nanosecond && want == arrow.Microsecond:
			v /= 1000
		case tt.Unit == arrow.Millisecond:
			v *= int64(want.Multiplier() / arrow.Millisecond.Multiplier())
		case tt.Unit == arrow.Microsecond && want == arrow.Nanosecond:
			v *= 1000
		default:
			return bad()
		}
		return canonTimestamp(v, nanos, zone), nil
	case iceberg.StringType:
		switch a := arr.(type) {
		case *array.String:
			return strconv.Quote(a.Value(i)), nil
		case *array.LargeString:
			return strconv.Quote(a.Value(i)), nil
		case *array.StringView:
			return strconv.Quote(a.Value(i)), nil
		}
		return bad()
	case iceberg.UUIDType:
		switch a := arr.(type) {
		case *extensions.UUIDArray:
			return a.Value(i).String(), nil
		case *array.FixedSizeBinary:
			return canonUUID(a.Value(i))
		case *array.Binary:
			return canonUUID(a.Value(i))
		}
		return bad()
	case iceberg.BinaryType, iceberg.FixedType:
		switch a := arr.(type) {
		case *array.Binary:
			return canonBytes(a.Value(i)), nil
		case *array.LargeBinary:
			return canonBytes(a.Value(i)), nil
		case *array.BinaryView:
			return canonBytes(a.Value(i)), nil
		case *array.FixedSizeBinary:
			return canonBytes(a.Value(i)), nil
		}
		return bad()
	case *iceberg.StructType:
		a, ok := arr.(*array.Struct)
		if !ok {
			return bad()
		}
		st := a.DataType().(*arrow.StructType)
		parts := make([]string, len(t.FieldList))
		for j, f := range t.FieldList {
			idx, ok := st.FieldIdx(f.Name)
			if !ok {
				return "", fmt.Errorf("struct field %q missing in arrow %s", f.Name, st)
			}
			c, err := fidArrowValue(a.Field(idx), i, f.Type)
			if err != nil {
				return "", fmt.Errorf("struct field %q: %w", f.Name, err)
			}
			parts[j] = f.Name + ": " + c
		}
		return "{" + strings.Join(parts, ", ") + "}", nil
	case *iceberg.ListType:
		var values arrow.Array
		var start, end int64
		switch a := arr.(type) {
		case *array.List:
			values = a.ListValues()
			s, e := a.ValueOffsets(i)
			start, end = s, e
		case *array.LargeList:
			values = a.ListValues()
			start, end = a.ValueOffsets(i)
		default:
			return bad()
		}
		parts := make([]string, 0, end-start)
		for j := start; j < end; j++ {
			c, err := fidArrowValue(values, int(j), t.Element)
			if err != nil {
				return "", fmt.Errorf("list element %d: %w", j-start, err)
			}
			parts = append(parts, c)
		}
		return "[" + strings.Join(parts, ", ") + "]", nil
	case *iceberg.MapType:
		a, ok := arr.(*array.Map)
		if !ok {
			return bad()
		}
		start, end := a.ValueOffsets(i)
		var parts []string
		for j := start; j < end; j++ {
			k, err := fidArrowValue(a.Keys(), int(j), t.KeyType)
			if err != nil {
				return "", fmt.Errorf("map key: %w", err)
			}
			v, err := fidArrowValue(a.Items(), int(j), t.ValueType)
			if err != nil {
				return "", fmt.Errorf("map value: %w", err)
			}
			parts = append(parts, k+" => "+v)
		}
		slices.Sort(parts)
		return "{" + strings.Join(parts, ", ") + "}", nil
	}
	return "", fmt.Errorf("the harness does not know Iceberg type %s", typ)
}
