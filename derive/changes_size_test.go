package derive

import (
	"context"
	"runtime"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/rs/zerolog"

	"github.com/lakegw/lakegw/changelog"
)

// TestSizeBytesAccountsForTheHeldMemory checks the estimate the changes
// cache bounds memory with against the Go heap a derived snapshot actually
// keeps alive: an estimate far below it lets the gateway outgrow its memory
// limit, and the collector then runs without pause.
func TestSizeBytesAccountsForTheHeldMemory(t *testing.T) {
	cat := newTestCatalog(t)
	tbl := createTable(t, cat, "sized", testSchema(), catalog.WithProperties(iceberg.Properties{
		"format-version": "2", "write.delete.mode": "merge-on-read",
	}))
	tbl = appendJSON(t, tbl, jsonRows(0, 50_000), 0)
	// Deletes carry before-images that derivation builds row by row.
	tbl = deleteWhere(t, tbl, iceberg.LessThan(iceberg.Reference("id"), int64(20_000)))
	hist, err := changelog.MainHistory(tbl.Metadata())
	if err != nil {
		t.Fatal(err)
	}
	for i, snap := range hist {
		t.Run([]string{"appends", "deletes"}[i], func(t *testing.T) { checkSizeBytes(t, tbl, snap) })
	}
}

func checkSizeBytes(t *testing.T, tbl *table.Table, snap changelog.SnapshotRef) {
	ctx := context.Background()
	heap := func() uint64 {
		// Two collections: the first only moves sync.Pool contents to
		// their victim caches.
		runtime.GC()
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	// A first derivation warms what derivation keeps across calls
	// (decoders, schemas), so that the measured one holds only its own.
	first, err := Derive(ctx, tbl, snap, Options{Log: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	first.Release()
	// Other goroutines (a catalog's, the runtime's) allocate now and then:
	// the smallest delta of three derivations is the snapshot's own.
	var est, held int64
	for range 3 {
		before := heap()
		c, err := Derive(ctx, tbl, snap, Options{Log: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		if h := int64(heap() - before); held == 0 || h < held {
			held = h
		}
		est = c.SizeBytes()
		runtime.KeepAlive(c)
		c.Release()
	}
	t.Logf("estimate %d bytes, heap held %d bytes", est, held)
	// Derivation leaves caches of its own (decoders, catalogs) behind, so
	// the heap delta is an upper bound; the estimate must cover most of it.
	if est < held*3/4 {
		t.Fatalf("SizeBytes %d is below 75%% of the %d heap bytes the snapshot holds", est, held)
	}
	if est > held*2 {
		t.Fatalf("SizeBytes %d is over twice the %d heap bytes the snapshot holds", est, held)
	}
}
