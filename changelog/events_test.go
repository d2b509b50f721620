package changelog

import (
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// TestCompactBatchesKeepsRowContent compacts a batch of every supported type
// of which only a few rows are referenced: the referenced rows must encode
// exactly as before, whether they were copied out or kept in place.
func TestCompactBatchesKeepsRowContent(t *testing.T) {
	var cols []arrow.Array
	var fields []arrow.Field
	for _, g := range goldenColumns() {
		arr := g.arr(memory.DefaultAllocator)
		// Repeat the column to 1000 rows so the batch counts as sparse.
		var chunks []arrow.Array
		for range 1000/arr.Len() + 1 {
			chunks = append(chunks, arr)
		}
		big, err := array.Concatenate(chunks, memory.DefaultAllocator)
		if err != nil {
			t.Fatal(err)
		}
		arr.Release()
		big = array.NewSlice(big, 0, 1000)
		cols = append(cols, big)
		fields = append(fields, arrow.Field{Name: g.name, Type: big.DataType(), Nullable: true})
	}
	b := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, 1000)
	enc, err := newRowAppender(b)
	if err != nil {
		t.Fatal(err)
	}
	refs := []int32{999, 3, 500, 3}
	var want []string
	recs := make([]Record, len(refs))
	for i, r := range refs {
		want = append(want, string(enc(nil, int(r))))
		recs[i] = Record{Op: OpDelete, Before: RowRef{0, r}, After: NoRow}
	}
	b.Retain()
	out := compactBatches([]arrow.RecordBatch{b}, recs)
	if len(out) != 1 {
		t.Fatalf("%d batches", len(out))
	}
	if out[0].NumRows() != 3 {
		t.Logf("batch kept whole (%d rows): take not supported for some type", out[0].NumRows())
	}
	enc2, err := newRowAppender(out[0])
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range recs {
		if got := string(enc2(nil, int(r.Before.Row))); got != want[i] {
			t.Errorf("record %d:\n got %s\nwant %s", i, got, want[i])
		}
	}
	out[0].Release()
	b.Release()
}
