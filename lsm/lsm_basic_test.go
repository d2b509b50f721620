package lsm

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/apache/iceberg-go/table"
)

func TestLsmBasicCommitScanChangelogGet(t *testing.T) {
	ctx := context.Background()
	cat := testCatalog(t, t.TempDir())
	tb := createTestTable(t, cat, "basic", CreateOptions{Buckets: 1}, Options{})
	w, err := tb.NewWriter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for i := int64(1); i <= 3; i++ {
		if err := w.Upsert(map[string]any{"id": i, "name": fmt.Sprint("n", i), "qty": i * 10, "price": 1.5}); err != nil {
			t.Fatal(err)
		}
	}
	r1, err := w.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Upsert(map[string]any{"id": int64(2), "name": "two", "qty": int64(22), "price": 2.5}); err != nil {
		t.Fatal(err)
	}
	if err := w.Delete(map[string]any{"id": int64(3)}); err != nil {
		t.Fatal(err)
	}
	if err := w.Upsert(map[string]any{"id": int64(1), "name": "n1", "qty": int64(10), "price": 1.5}); err != nil {
		t.Fatal(err) // unchanged: no event
	}
	r2, err := w.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ident := table.Identifier{"ns", "basic"}
	got := scanRows(t, cat, ident)
	want := map[string]string{"1": "1|n1|10|1.5", "2": "2|two|22|2.5"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("scan: got %v want %v", got, want)
	}
	tbl, _ := cat.LoadTable(ctx, ident)
	ev1 := deriveEvents(t, tbl, r1.SnapshotID)
	if !slices.Equal(ev1, []string{"p0 +I -> 1|n1|10|1.5", "p0 +I -> 2|n2|20|1.5", "p0 +I -> 3|n3|30|1.5"}) {
		t.Fatalf("events 1: %q", ev1)
	}
	ev2 := deriveEvents(t, tbl, r2.SnapshotID)
	if !slices.Equal(ev2, []string{"p0 +U 2|n2|20|1.5 -> 2|two|22|2.5", "p0 -D 3|n3|30|1.5"}) {
		t.Fatalf("events 2: %q", ev2)
	}
	if fmt.Sprint(r2.Counts) != "[2]" {
		t.Fatalf("counts %v", r2.Counts)
	}
	row, ok, err := tb.Get(ctx, map[string]any{"id": int64(2)})
	if err != nil || !ok || renderMap(row) != "2|two|22|2.5" {
		t.Fatalf("get 2: %v %v %v", row, ok, err)
	}
	if _, ok, err := tb.Get(ctx, map[string]any{"id": int64(3)}); err != nil || ok {
		t.Fatalf("get 3: %v %v", ok, err)
	}
	cr, err := tb.Compact(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("compaction: %+v", cr)
	if got := scanRows(t, cat, ident); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("scan after compaction: got %v want %v", got, want)
	}
	tbl, _ = cat.LoadTable(ctx, ident)
	if op := tbl.CurrentSnapshot().Summary.Operation; op != table.OpReplace {
		t.Fatalf("compaction snapshot operation %s", op)
	}
	if ev := deriveEvents(t, tbl, cr.SnapshotID); len(ev) != 0 {
		t.Fatalf("compaction events: %q", ev)
	}
	row, ok, err = tb.Get(ctx, map[string]any{"id": int64(1)})
	if err != nil || !ok || renderMap(row) != "1|n1|10|1.5" {
		t.Fatalf("get 1 after compaction: %v %v %v", row, ok, err)
	}
}
