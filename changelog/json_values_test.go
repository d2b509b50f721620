package changelog

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/extensions"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/google/uuid"
)

// golden is one column with the JSON expected for each of its rows.
type golden struct {
	name string
	arr  func(memory.Allocator) arrow.Array
	want []string
}

func build[B array.Builder](mem memory.Allocator, newB func(memory.Allocator) B, fill func(B)) arrow.Array {
	b := newB(mem)
	defer b.Release()
	fill(b)
	return b.NewArray()
}

func fromJSON(mem memory.Allocator, dt arrow.DataType, js string) arrow.Array {
	arr, _, err := array.FromJSON(mem, dt, strings.NewReader(js))
	if err != nil {
		panic(err)
	}
	return arr
}

func goldenColumns() []golden {
	return []golden{
		{"null", func(m memory.Allocator) arrow.Array { return array.NewNull(2) }, []string{"null", "null"}},
		{"bool", func(m memory.Allocator) arrow.Array {
			return fromJSON(m, arrow.FixedWidthTypes.Boolean, `[true,false,null]`)
		}, []string{"true", "false", "null"}},
		{"int32", func(m memory.Allocator) arrow.Array {
			return fromJSON(m, arrow.PrimitiveTypes.Int32, `[0,-2147483648,2147483647,null]`)
		}, []string{"0", "-2147483648", "2147483647", "null"}},
		{"int64", func(m memory.Allocator) arrow.Array {
			return fromJSON(m, arrow.PrimitiveTypes.Int64, `[-9223372036854775808,9223372036854775807]`)
		}, []string{"-9223372036854775808", "9223372036854775807"}},
		{"float32", func(m memory.Allocator) arrow.Array {
			return build(m, array.NewFloat32Builder, func(b *array.Float32Builder) {
				b.AppendValues([]float32{1.1, 0, -2.5, float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 1e-7, 3e38}, nil)
			})
		}, []string{"1.1", "0", "-2.5", `"NaN"`, `"Infinity"`, `"-Infinity"`, "1e-07", "3e+38"}},
		{"float64", func(m memory.Allocator) arrow.Array {
			return build(m, array.NewFloat64Builder, func(b *array.Float64Builder) {
				b.AppendValues([]float64{0.1, 123456789.125, math.NaN(), math.Inf(-1), 1e21, -1e-7}, nil)
				b.AppendNull()
			})
		}, []string{"0.1", "123456789.125", `"NaN"`, `"-Infinity"`, "1e+21", "-1e-07", "null"}},
		{"decimal(38,10)", func(m memory.Allocator) arrow.Array {
			return build(m, func(mem memory.Allocator) *array.Decimal128Builder {
				return array.NewDecimal128Builder(mem, &arrow.Decimal128Type{Precision: 38, Scale: 10})
			}, func(b *array.Decimal128Builder) {
				max38, _ := decimal128.FromString("9999999999999999999999999999.9999999999", 38, 10)
				b.Append(max38)
				b.Append(max38.Negate())
				b.Append(decimal128.FromI64(1))
				b.Append(decimal128.FromI64(-123456789012))
				b.Append(decimal128.FromI64(0))
				b.Append(decimal128.FromU64(10000000000000000000))
			})
		}, []string{"9999999999999999999999999999.9999999999", "-9999999999999999999999999999.9999999999",
			"0.0000000001", "-12.3456789012", "0.0000000000", "1000000000.0000000000"}},
		{"decimal(9,0)", func(m memory.Allocator) arrow.Array {
			return fromJSON(m, &arrow.Decimal128Type{Precision: 9, Scale: 0}, `["-5","123456789"]`)
		}, []string{"-5", "123456789"}},
		{"decimal(5,2)", func(m memory.Allocator) arrow.Array {
			return fromJSON(m, &arrow.Decimal128Type{Precision: 5, Scale: 2}, `["-0.05","123.40",null]`)
		}, []string{"-0.05", "123.40", "null"}},
		{"date", func(m memory.Allocator) arrow.Array {
			return build(m, array.NewDate32Builder, func(b *array.Date32Builder) {
				b.AppendValues([]arrow.Date32{0, 18628, -1, -719528, 2932896}, nil)
			})
		}, []string{`"1970-01-01"`, `"2021-01-01"`, `"1969-12-31"`, `"0000-01-01"`, `"9999-12-31"`}},
		{"time", func(m memory.Allocator) arrow.Array {
			return build(m, func(mem memory.Allocator) *array.Time64Builder {
				return array.NewTime64Builder(mem, arrow.FixedWidthTypes.Time64us.(*arrow.Time64Type))
			}, func(b *array.Time64Builder) {
				b.AppendValues([]arrow.Time64{0, 45296_000000, 45296_123000, 45296_000001, 86399_999999}, nil)
			})
		}, []string{`"00:00:00"`, `"12:34:56"`, `"12:34:56.123"`, `"12:34:56.000001"`, `"23:59:59.999999"`}},
		{"timestamp", func(m memory.Allocator) arrow.Array {
			return build(m, func(mem memory.Allocator) *array.TimestampBuilder {
				return array.NewTimestampBuilder(mem, &arrow.TimestampType{Unit: arrow.Microsecond})
			}, func(b *array.TimestampBuilder) {
				b.AppendValues([]arrow.Timestamp{0, 1609330394123000, 1609330394123456, -1}, nil)
			})
		}, []string{`"1970-01-01 00:00:00"`, `"2020-12-30 12:13:14.123"`, `"2020-12-30 12:13:14.123456"`, `"1969-12-31 23:59:59.999999"`}},
		{"timestamptz", func(m memory.Allocator) arrow.Array {
			return build(m, func(mem memory.Allocator) *array.TimestampBuilder {
				return array.NewTimestampBuilder(mem, arrow.FixedWidthTypes.Timestamp_us.(*arrow.TimestampType))
			}, func(b *array.TimestampBuilder) {
				b.AppendValues([]arrow.Timestamp{1609330394123000, 0}, nil)
			})
		}, []string{`"2020-12-30 12:13:14.123Z"`, `"1970-01-01 00:00:00Z"`}},
		{"timestamp_ns", func(m memory.Allocator) arrow.Array {
			return build(m, func(mem memory.Allocator) *array.TimestampBuilder {
				return array.NewTimestampBuilder(mem, &arrow.TimestampType{Unit: arrow.Nanosecond})
			}, func(b *array.TimestampBuilder) {
				b.AppendValues([]arrow.Timestamp{1609330394123456789}, nil)
			})
		}, []string{`"2020-12-30 12:13:14.123456789"`}},
		{"string", func(m memory.Allocator) arrow.Array {
			return build(m, array.NewStringBuilder, func(b *array.StringBuilder) {
				b.AppendValues([]string{"plain", "q\"b\\s/", "line\nfeed\ttab\r\x01", "ünïcødé ✓ 😀", "bad\xffutf8", ""}, nil)
			})
		}, []string{`"plain"`, `"q\"b\\s/"`, `"line\nfeed\ttab\r\u0001"`, `"ünïcødé ✓ 😀"`, `"bad\ufffdutf8"`, `""`}},
		{"binary", func(m memory.Allocator) arrow.Array {
			return build(m, func(mem memory.Allocator) *array.BinaryBuilder {
				return array.NewBinaryBuilder(mem, arrow.BinaryTypes.Binary)
			}, func(b *array.BinaryBuilder) {
				b.AppendValues([][]byte{{0, 1, 2, 0xff}, {}}, nil)
			})
		}, []string{`"AAEC/w=="`, `""`}},
		{"fixed[3]", func(m memory.Allocator) arrow.Array {
			return build(m, func(mem memory.Allocator) *array.FixedSizeBinaryBuilder {
				return array.NewFixedSizeBinaryBuilder(mem, &arrow.FixedSizeBinaryType{ByteWidth: 3})
			}, func(b *array.FixedSizeBinaryBuilder) {
				b.AppendValues([][]byte{{'a', 'b', 'c'}}, nil)
			})
		}, []string{`"YWJj"`}},
		{"uuid", func(m memory.Allocator) arrow.Array {
			b := extensions.NewUUIDBuilder(m)
			defer b.Release()
			b.Append(uuid.MustParse("123e4567-e89b-12d3-a456-426614174000"))
			b.AppendNull()
			return b.NewArray()
		}, []string{`"123e4567-e89b-12d3-a456-426614174000"`, "null"}},
		{"struct", func(m memory.Allocator) arrow.Array {
			return fromJSON(m, arrow.StructOf(
				arrow.Field{Name: "a", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
				arrow.Field{Name: "b\"q", Type: arrow.BinaryTypes.String, Nullable: true},
			), `[{"a":1,"b\"q":"x"},null,{"a":null,"b\"q":null}]`)
		}, []string{`{"a":1,"b\"q":"x"}`, "null", `{"a":null,"b\"q":null}`}},
		{"list", func(m memory.Allocator) arrow.Array {
			return fromJSON(m, arrow.ListOf(arrow.PrimitiveTypes.Int64), `[[1,2,null],[],null]`)
		}, []string{"[1,2,null]", "[]", "null"}},
		{"list<struct>", func(m memory.Allocator) arrow.Array {
			return fromJSON(m, arrow.ListOf(arrow.StructOf(arrow.Field{Name: "x", Type: arrow.PrimitiveTypes.Float64, Nullable: true})), `[[{"x":1.5},{"x":null}]]`)
		}, []string{`[{"x":1.5},{"x":null}]`}},
		{"map<string,int>", func(m memory.Allocator) arrow.Array {
			return fromJSON(m, arrow.MapOf(arrow.BinaryTypes.String, arrow.PrimitiveTypes.Int32),
				`[[{"key":"a","value":1},{"key":"b\n","value":null}],[],null]`)
		}, []string{`{"a":1,"b\n":null}`, "{}", "null"}},
		{"map<int,string>", func(m memory.Allocator) arrow.Array {
			return fromJSON(m, arrow.MapOf(arrow.PrimitiveTypes.Int32, arrow.BinaryTypes.String),
				`[[{"key":1,"value":"x"},{"key":2,"value":null}]]`)
		}, []string{`[{"key":1,"value":"x"},{"key":2,"value":null}]`}},
		{"dictionary<string>", func(m memory.Allocator) arrow.Array {
			dt := &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int8, ValueType: arrow.BinaryTypes.String}
			b := array.NewDictionaryBuilder(m, dt).(*array.BinaryDictionaryBuilder)
			defer b.Release()
			_ = b.AppendString("x")
			_ = b.AppendString("y")
			_ = b.AppendString("x")
			b.AppendNull()
			return b.NewArray()
		}, []string{`"x"`, `"y"`, `"x"`, "null"}},
	}
}

func TestJSONGoldenEveryType(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.DefaultAllocator)
	defer mem.AssertSize(t, 0)
	for _, g := range goldenColumns() {
		t.Run(g.name, func(t *testing.T) {
			arr := g.arr(mem)
			defer arr.Release()
			if arr.Len() != len(g.want) {
				t.Fatalf("column has %d rows, golden has %d", arr.Len(), len(g.want))
			}
			fn, err := newAppender(arr)
			if err != nil {
				t.Fatal(err)
			}
			for i, want := range g.want {
				got := string(fn(nil, i))
				if got != want {
					t.Errorf("row %d: got %s, want %s", i, got, want)
				}
				if !json.Valid([]byte(got)) {
					t.Errorf("row %d: %s is not valid JSON", i, got)
				}
			}
		})
	}
}

func TestJSONUnsupportedTypeIsAnError(t *testing.T) {
	arr := build(memory.DefaultAllocator, array.NewMonthIntervalBuilder, func(b *array.MonthIntervalBuilder) { b.Append(1) })
	defer arr.Release()
	if _, err := newAppender(arr); err == nil || !strings.Contains(err.Error(), "not supported") {
		t.Fatalf("got %v, want a not supported error", err)
	}
}
