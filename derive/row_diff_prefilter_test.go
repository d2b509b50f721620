package derive

import (
	"fmt"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// diffBatch is a batch of (id, name) rows; idType is the id column's type.
func diffBatch(t *testing.T, idType arrow.DataType, rows ...[2]any) arrow.RecordBatch {
	t.Helper()
	sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: idType, Nullable: true}, {Name: "name", Type: arrow.BinaryTypes.String}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for _, r := range rows {
		switch id := r[0].(type) {
		case nil:
			b.Field(0).AppendNull()
		case int:
			if idType == arrow.PrimitiveTypes.Int64 {
				b.Field(0).(*array.Int64Builder).Append(int64(id))
			} else {
				b.Field(0).(*array.Int32Builder).Append(int32(id))
			}
		}
		b.Field(1).(*array.StringBuilder).Append(r[1].(string))
	}
	return b.NewRecordBatch()
}

func diffResult(t *testing.T, d *rowDiff) (deletes, inserts []string) {
	t.Helper()
	for _, ref := range d.deletes() {
		deletes = append(deletes, string(d.encode(nil, ref)))
	}
	for _, ref := range d.inserts {
		inserts = append(inserts, string(d.encode(nil, ref)))
	}
	slices.Sort(deletes)
	slices.Sort(inserts)
	return deletes, inserts
}

// TestRowDiffFirstColumnFilter checks that rows skipped by the first-column
// pre-check are exactly the ones the full comparison would not cancel:
// carry-over (same row removed and added) still cancels, new keys and
// changed rows are inserts, with the filter on (same id type on both sides)
// and off (the added batch's ids typed differently), nulls included.
func TestRowDiffFirstColumnFilter(t *testing.T) {
	i64, i32 := arrow.PrimitiveTypes.Int64, arrow.PrimitiveTypes.Int32
	for _, afterType := range []arrow.DataType{i64, i32} {
		t.Run(fmt.Sprint("added ids ", afterType), func(t *testing.T) {
			d := newRowDiff()
			defer d.release()
			before := diffBatch(t, i64, [2]any{1, "a"}, [2]any{2, "b"}, [2]any{3, "c"}, [2]any{nil, "n"}, [2]any{5, "e"})
			if err := d.addBefore(before); err != nil {
				t.Fatal(err)
			}
			after := diffBatch(t, afterType, [2]any{3, "c"}, [2]any{nil, "n"}, [2]any{5, "E"}, [2]any{6, "f"}, [2]any{nil, "m"})
			if err := d.addAfter(after); err != nil {
				t.Fatal(err)
			}
			if afterType == i32 && !d.first.off {
				t.Fatal("the filter must turn off when the added ids are typed differently")
			}
			if afterType == i64 && d.first.off {
				t.Fatal("the filter must stay on for int64 ids on both sides")
			}
			deletes, inserts := diffResult(t, d)
			// With int32 ids the JSON of (3, "c") is the same text, so
			// carry-over cancels across the types as well.
			wantDel := []string{`{"id":1,"name":"a"}`, `{"id":2,"name":"b"}`, `{"id":5,"name":"e"}`}
			wantIns := []string{`{"id":5,"name":"E"}`, `{"id":6,"name":"f"}`, `{"id":null,"name":"m"}`}
			if !slices.Equal(deletes, wantDel) || !slices.Equal(inserts, wantIns) {
				t.Fatalf("deletes %v inserts %v, want %v and %v", deletes, inserts, wantDel, wantIns)
			}
		})
	}
}
