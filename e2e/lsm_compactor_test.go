package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/rs/zerolog"

	"github.com/lakegw/lakegw/lake"
	"github.com/lakegw/lakegw/lsm"
)

// TestServeCompactsLSMTablesInTheBackground writes sorted runs without
// compacting them; the gateway's background compactor merges them with a
// replace snapshot, which adds no records to the topic.
func TestServeCompactsLSMTablesInTheBackground(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	cat, err := lake.OpenCatalog(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	ident := table.Identifier{"shop", "stock"}
	if err := cat.CreateNamespace(ctx, table.Identifier{"shop"}, nil); err != nil {
		t.Fatal(err)
	}
	schema := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "qty", Type: iceberg.PrimitiveTypes.Int64})
	tb, err := lsm.Create(ctx, cat, ident, schema, lsm.CreateOptions{PrimaryKey: []string{"id"}, Buckets: 1}, lsm.Options{Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	// Six commits: six sorted runs in the one bucket, over the trigger of 5.
	for i := range 6 {
		w, err := tb.NewWriter(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for id := range int64(20) {
			if err := w.Upsert(map[string]any{"id": id, "qty": int64(i)*100 + id}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := w.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	dataFiles := func() int {
		tbl, err := cat.LoadTable(ctx, ident)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		tasks, err := tbl.Scan().PlanFiles(ctx)
		if err != nil {
			t.Fatal(err)
		}
		n += len(tasks)
		return n
	}
	if n := dataFiles(); n != 6 {
		t.Fatalf("%d live data files before compaction, want 6", n)
	}
	// 20 inserts, then 5 x 20 updates.
	const events = 120
	g := startGateway(t, dir, "", "--compact-interval", "300ms")
	deadline := time.Now().Add(30 * time.Second)
	for dataFiles() >= 6 {
		if time.Now().After(deadline) {
			t.Fatalf("the gateway did not compact the table\n%s", g.Logs())
		}
		time.Sleep(200 * time.Millisecond)
	}
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	if op := tbl.CurrentSnapshot().Summary.Operation; op != table.OpReplace {
		t.Fatalf("compaction committed a %q snapshot, want replace", op)
	}
	time.Sleep(500 * time.Millisecond) // let the gateway index the replace snapshot
	if p := rawFetch(t, mustClient(t, g.addr), "shop.stock", 0, 12); p.HighWatermark != events {
		t.Fatalf("after compaction the topic holds %d records, want %d", p.HighWatermark, events)
	}
	got, ok, err := tb.Get(ctx, map[string]any{"id": int64(7)})
	if err != nil || !ok || got["qty"] != int64(507) {
		t.Fatalf("lookup after compaction: %v %v %v", got, ok, err)
	}
}
