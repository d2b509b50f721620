package derive

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// formSchema has a column of every type binaryRowForm covers that Iceberg
// tables produce.
var formSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "small", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "flag", Type: arrow.FixedWidthTypes.Boolean, Nullable: true},
	{Name: "ratio", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "ratio32", Type: arrow.PrimitiveTypes.Float32, Nullable: true},
	{Name: "amount", Type: &arrow.Decimal128Type{Precision: 18, Scale: 2}, Nullable: true},
	{Name: "day", Type: arrow.FixedWidthTypes.Date32, Nullable: true},
	{Name: "at", Type: &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"}, Nullable: true},
	{Name: "clock", Type: arrow.FixedWidthTypes.Time64us, Nullable: true},
	{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "blob", Type: arrow.BinaryTypes.Binary, Nullable: true},
	{Name: "code", Type: &arrow.FixedSizeBinaryType{ByteWidth: 3}, Nullable: true},
}, nil)

// formRow is one row of formSchema: values drawn from a few each, so that
// random rows collide, nulls included.
type formRow [12]int

func randomFormRow(r *rand.Rand) formRow {
	var row formRow
	for i := range row {
		row[i] = r.IntN(4) // 0 is null
	}
	return row
}

func formBatch(t testing.TB, rows []formRow) arrow.RecordBatch {
	t.Helper()
	b := array.NewRecordBuilder(memory.DefaultAllocator, formSchema)
	defer b.Release()
	floats := []float64{0, math.NaN(), math.Copysign(0, -1), 1.5}
	for _, row := range rows {
		for c, v := range row {
			f := b.Field(c)
			if v == 0 {
				f.AppendNull()
				continue
			}
			switch fb := f.(type) {
			case *array.Int64Builder:
				fb.Append(int64(v))
			case *array.Int32Builder:
				fb.Append(int32(-v))
			case *array.BooleanBuilder:
				fb.Append(v%2 == 0)
			case *array.Float64Builder:
				fb.Append(floats[v])
			case *array.Float32Builder:
				fb.Append(float32(floats[v]))
			case *array.Decimal128Builder:
				fb.Append(decimal128.FromI64(int64(v) * 150))
			case *array.Date32Builder:
				fb.Append(arrow.Date32(v * 400))
			case *array.TimestampBuilder:
				fb.Append(arrow.Timestamp(int64(v) * 1_000_001))
			case *array.Time64Builder:
				fb.Append(arrow.Time64(int64(v) * 3_600_000_001))
			case *array.StringBuilder:
				// "" next to null, and ("a", "b") next to ("ab", ""):
				// forms must tell apart what JSON does.
				fb.Append([]string{"", "", "a", "ab"}[v])
			case *array.BinaryBuilder:
				fb.Append([]byte([]string{"", "b", "", "\x00"}[v]))
			case *array.FixedSizeBinaryBuilder:
				fb.Append([]byte{byte(v), 0, byte(v)})
			default:
				t.Fatalf("no value for %T", f)
			}
		}
	}
	return b.NewRecordBatch()
}

// runFormDiff diffs the batches, by binary form or (json) by JSON alone,
// and returns the JSON of the deletes and inserts in their order.
func runFormDiff(t *testing.T, befores, afters [][]formRow, json bool) (deletes, inserts []string, binary bool) {
	t.Helper()
	d := newRowDiff()
	defer d.release()
	if json {
		d.compareJSON()
	}
	for _, rows := range befores {
		if err := d.addBefore(formBatch(t, rows)); err != nil {
			t.Fatal(err)
		}
	}
	for _, rows := range afters {
		if err := d.addAfter(formBatch(t, rows)); err != nil {
			t.Fatal(err)
		}
	}
	for _, ref := range d.deletes() {
		deletes = append(deletes, string(d.encode(nil, ref)))
	}
	for _, ref := range d.inserts {
		inserts = append(inserts, string(d.encode(nil, ref)))
	}
	return deletes, inserts, d.binary
}

// TestRowDiffBinaryFormAgreesWithJSON checks the binary row form against
// the JSON it stands for: random removed and added rows of every covered
// type (nulls, NaN, negative zero, strings of different lengths, values
// repeated so that rows cancel, several at once) give the same deletes and
// inserts, in the same order, compared either way.
func TestRowDiffBinaryFormAgreesWithJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	cancelled := 0
	for round := range 200 {
		var befores, afters [][]formRow
		var pool []formRow
		for range 1 + r.IntN(3) {
			var rows []formRow
			for range r.IntN(20) {
				row := randomFormRow(r)
				rows = append(rows, row)
				pool = append(pool, row)
			}
			befores = append(befores, rows)
		}
		for range 1 + r.IntN(3) {
			var rows []formRow
			for range r.IntN(20) {
				switch {
				case len(pool) > 0 && r.IntN(2) == 0:
					rows = append(rows, pool[r.IntN(len(pool))]) // carry-over
				case len(pool) > 0 && r.IntN(2) == 0:
					// A near miss: one or two columns changed.
					row := pool[r.IntN(len(pool))]
					for range 1 + r.IntN(2) {
						row[r.IntN(len(row))] = r.IntN(4)
					}
					if r.IntN(2) == 0 {
						row[9], row[10] = 2+r.IntN(2), 1+r.IntN(2)
					}
					rows = append(rows, row)
				default:
					row := randomFormRow(r)
					row[0] = 1 + r.IntN(3) // a key some removed row may have
					rows = append(rows, row)
				}
			}
			afters = append(afters, rows)
		}
		delB, insB, binary := runFormDiff(t, befores, afters, false)
		delJ, insJ, _ := runFormDiff(t, befores, afters, true)
		if !binary {
			t.Fatal("the diff compared by JSON although every column has a binary form")
		}
		if !slices.Equal(delB, delJ) || !slices.Equal(insB, insJ) {
			t.Fatalf("round %d: binary form gave deletes %v inserts %v, JSON %v and %v", round, delB, insB, delJ, insJ)
		}
		n := 0
		for _, rows := range befores {
			n += len(rows)
		}
		cancelled += n - len(delB)
	}
	if cancelled < 100 {
		t.Fatalf("only %d rows cancelled in all rounds: the test does not exercise carry-over", cancelled)
	}
}

// TestRowDiffTurnsToJSONForUncoveredColumns checks the fall-back: a batch
// with a column binaryRowForm does not cover, or typed differently from
// the batches before it, has the diff compare by JSON from then on, and
// rows removed before still cancel.
func TestRowDiffTurnsToJSONForUncoveredColumns(t *testing.T) {
	i64 := arrow.PrimitiveTypes.Int64
	for _, second := range []arrow.DataType{arrow.PrimitiveTypes.Int32, arrow.ListOf(arrow.PrimitiveTypes.Int64)} {
		t.Run(fmt.Sprint(second), func(t *testing.T) {
			d := newRowDiff()
			defer d.release()
			if err := d.addBefore(diffBatch(t, i64, [2]any{1, "a"}, [2]any{2, "b"})); err != nil {
				t.Fatal(err)
			}
			if !d.binary {
				t.Fatal("int64 and string columns must be compared by binary form")
			}
			var after arrow.RecordBatch
			if _, ok := second.(*arrow.ListType); ok {
				sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: second}, {Name: "name", Type: arrow.BinaryTypes.String}}, nil)
				b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
				lb := b.Field(0).(*array.ListBuilder)
				lb.Append(true)
				lb.ValueBuilder().(*array.Int64Builder).Append(2)
				b.Field(1).(*array.StringBuilder).Append("b")
				after = b.NewRecordBatch()
				b.Release()
			} else {
				after = diffBatch(t, second, [2]any{2, "b"}, [2]any{3, "c"})
			}
			if err := d.addAfter(after); err != nil {
				t.Fatal(err)
			}
			if d.binary {
				t.Fatal("the diff must compare by JSON once a batch's columns differ")
			}
			deletes, inserts := diffResult(t, d)
			// (2, "b") as int32 has the JSON of the int64 row and cancels;
			// as a list it is another row.
			wantDel, wantIns := []string{`{"id":1,"name":"a"}`}, []string{`{"id":3,"name":"c"}`}
			if _, ok := second.(*arrow.ListType); ok {
				wantDel, wantIns = []string{`{"id":1,"name":"a"}`, `{"id":2,"name":"b"}`}, []string{`{"id":[2],"name":"b"}`}
			}
			if !slices.Equal(deletes, wantDel) || !slices.Equal(inserts, wantIns) {
				t.Fatalf("deletes %v inserts %v, want %v and %v", deletes, inserts, wantDel, wantIns)
			}
		})
	}
}

// BenchmarkRowDiff is the diff of a merge-on-read snapshot's rows: 10,000
// removed rows of formSchema and as many added, half of them carry-over,
// the others with a changed name, compared by binary form or by JSON.
func BenchmarkRowDiff(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	rows := make([]formRow, 10_000)
	for i := range rows {
		rows[i] = randomFormRow(r)
		rows[i][0] = 1 + i%3
	}
	added := slices.Clone(rows)
	for i := 0; i < len(added); i += 2 {
		added[i][9] = 1 + added[i][9]%3
	}
	before, after := formBatch(b, rows), formBatch(b, added)
	defer before.Release()
	defer after.Release()
	for _, form := range []string{"binary", "json"} {
		b.Run("form="+form, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				d := newRowDiff()
				if form == "json" {
					d.compareJSON()
				}
				before.Retain()
				after.Retain()
				if err := d.addBefore(before); err != nil {
					b.Fatal(err)
				}
				if err := d.addAfter(after); err != nil {
					b.Fatal(err)
				}
				d.release()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(2*len(rows)), "ns/row")
		})
	}
}
