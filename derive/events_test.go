package derive

import (
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/changelog"
)

// A removed and an added row of one key become an update, first removed
// with first added; the rest stay deletes (first) and inserts, in order.
func TestBuildRecordsPairsEachKeysRowsInOrder(t *testing.T) {
	sc, err := table.SchemaToArrowSchema(testSchema(), nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, sc, stringsReader(`[
		{"id":1,"name":"removed 1a"}, {"id":2,"name":"removed 2"}, {"id":1,"name":"removed 1b"},
		{"id":1,"name":"added 1a"}, {"id":3,"name":"added 3"}, {"id":1,"name":"added 1b"}, {"id":1,"name":"added 1c"}]`))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	row := func(i int32) changelog.RowRef { return changelog.RowRef{Batch: 0, Row: i} }
	deletes := []changelog.RowRef{row(0), row(1), row(2)}
	inserts := []changelog.RowRef{row(3), row(4), row(5), row(6)}
	// Keyed by the integer id alone (paired by value) and by id and amount
	// (all null here; paired by the key's JSON): the same pairs.
	for _, keys := range [][]int{{1}, {1, 3}, nil} {
		keyed := keys != nil
		c := &changelog.Changes{Schema: testSchema(), KeyFieldIDs: keys}
		want := []changelog.Record{
			{Op: changelog.OpDelete, Before: row(1), After: changelog.NoRow},
			{Op: changelog.OpUpdate, Before: row(0), After: row(3)},
			{Op: changelog.OpInsert, Before: changelog.NoRow, After: row(4)},
			{Op: changelog.OpUpdate, Before: row(2), After: row(5)},
			{Op: changelog.OpInsert, Before: changelog.NoRow, After: row(6)},
		}
		if !keyed {
			// Without a key nothing pairs.
			want = []changelog.Record{
				{Op: changelog.OpDelete, Before: row(0), After: changelog.NoRow}, {Op: changelog.OpDelete, Before: row(1), After: changelog.NoRow},
				{Op: changelog.OpDelete, Before: row(2), After: changelog.NoRow},
				{Op: changelog.OpInsert, Before: changelog.NoRow, After: row(3)}, {Op: changelog.OpInsert, Before: changelog.NoRow, After: row(4)},
				{Op: changelog.OpInsert, Before: changelog.NoRow, After: row(5)}, {Op: changelog.OpInsert, Before: changelog.NoRow, After: row(6)},
			}
		}
		got, err := buildRecords([]arrow.RecordBatch{rec}, deletes, inserts, c)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("key %v:\n got %v\nwant %v", keys, got, want)
		}
	}
}
