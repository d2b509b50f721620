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

// TestSizeBytesOfSmallSnapshots is the same check for a streaming table:
// snapshots of a few rows each, which the changes cache holds by the
// thousand. Their memory is mostly the fixed cost of each batch and column
// (arrow schemas, array headers), not row data: an estimate counting the
// buffers alone was a fifth of the heap here, and a gateway serving such a
// table grew past its cache budget by as much.
func TestSizeBytesOfSmallSnapshots(t *testing.T) {
	cat := newTestCatalog(t)
	tbl := createTable(t, cat, "small", testSchema(), catalog.WithProperties(iceberg.Properties{
		"format-version": "2", "write.delete.mode": "merge-on-read",
	}))
	for i := range 36 {
		tbl = appendJSON(t, tbl, jsonRows(i*5, i*5+5), 0)
		if i%3 == 2 {
			tbl = deleteWhere(t, tbl, iceberg.EqualTo(iceberg.Reference("id"), int64(i*5)))
		}
	}
	hist, err := changelog.MainHistory(tbl.Metadata())
	if err != nil {
		t.Fatal(err)
	}
	checkSizeBytes(t, tbl, hist...)
}

// checkSizeBytes derives snaps, holds them all, and compares the heap they
// hold with the sum of their estimates.
func checkSizeBytes(t *testing.T, tbl *table.Table, snaps ...changelog.SnapshotRef) {
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
	for _, snap := range snaps {
		first, err := Derive(ctx, tbl, snap, Options{Log: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		first.Release()
	}
	// Other goroutines (a catalog's, the runtime's) allocate now and then:
	// the smallest delta of three derivations is the snapshot's own.
	var est, held int64
	for range 3 {
		before := heap()
		var all []*changelog.Changes
		est = 0
		for _, snap := range snaps {
			c, err := Derive(ctx, tbl, snap, Options{Log: zerolog.Nop()})
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, c)
			est += c.SizeBytes()
		}
		if h := int64(heap() - before); held == 0 || h < held {
			held = h
		}
		runtime.KeepAlive(all)
		for _, c := range all {
			c.Release()
		}
	}
	t.Logf("%d snapshots: estimate %d bytes, heap held %d bytes", len(snaps), est, held)
	// Derivation leaves caches of its own (decoders, catalogs) behind, so
	// the heap delta is an upper bound; the estimate must cover most of it.
	if est < held*3/4 {
		t.Fatalf("SizeBytes %d is below 75%% of the %d heap bytes the snapshot holds", est, held)
	}
	if est > held*2 {
		t.Fatalf("SizeBytes %d is over twice the %d heap bytes the snapshot holds", est, held)
	}
}
