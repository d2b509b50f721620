package derive

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/changelog"
)

// buildMorHistory writes a merge-on-read table of n snapshots, as a
// streaming table gets them: one append, then inserts of two rows, one of
// which the next snapshot deletes by position (it needs its parent's plan).
func buildMorHistory(tb testing.TB, n int) *table.Table {
	tb.Helper()
	ctx := context.Background()
	cat := newTestCatalog(tb)
	tbl, err := cat.CreateTable(ctx, table.Identifier{"ns", "history"}, testSchema(), catalog.WithProperties(iceberg.Properties{
		"format-version": "2", "write.delete.mode": "merge-on-read",
	}))
	if err != nil {
		tb.Fatal(err)
	}
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		tb.Fatal(err)
	}
	appendRows := func(rows string) {
		rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, sc, stringsReader(rows))
		if err != nil {
			tb.Fatal(err)
		}
		defer rec.Release()
		at := arrowTableFromRecords(rec)
		defer at.Release()
		if tbl, err = tbl.AppendTable(ctx, at, 10, nil); err != nil {
			tb.Fatal(err)
		}
	}
	appendRows(jsonRows(0, 100))
	for i := 1; i < n; i++ {
		if i%2 == 1 {
			appendRows(jsonRows(1000+2*i, 1002+2*i))
			continue
		}
		// Delete one of the two rows the last snapshot added, by
		// position: every snapshot adds a manifest, as a streaming
		// table's commits do until its manifests are rewritten.
		if tbl, err = tbl.Delete(ctx, iceberg.EqualTo(iceberg.Reference("id"), int64(1000+2*(i-1))), nil); err != nil {
			tb.Fatal(err)
		}
	}
	hist, err := changelog.MainHistory(tbl.Metadata())
	if err != nil || len(hist) != n {
		tb.Fatalf("built %d snapshots (%v), want %d", len(hist), err, n)
	}
	return tbl
}

// coldReplay derives hist in order with a fresh plan cache, window
// snapshots at a time concurrently (as fetch's read-ahead does), and
// returns the cache and the record count of every snapshot.
func coldReplay(tb testing.TB, tbl *table.Table, hist []changelog.SnapshotRef, window int) (*PlanCache, []int) {
	tb.Helper()
	cache := NewPlanCache(64, 1<<18)
	counts := make([]int, len(hist))
	for start := 0; start < len(hist); start += window {
		var wg sync.WaitGroup
		errs := make([]error, len(hist))
		for i := start; i < min(start+window, len(hist)); i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				c, err := Derive(context.Background(), tbl, hist[i], Options{PlanCache: cache})
				if err != nil {
					errs[i] = err
					return
				}
				counts[i] = len(c.Records)
				c.Release()
			}()
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				tb.Fatalf("snapshot %d: %v", i, err)
			}
		}
	}
	return cache, counts
}

// A cold reader deriving a long history, several snapshots at a time,
// runs iceberg-go's planner O(1) times: from the start, never (plans are
// extended from the empty table); from deep in the history, once (then
// every plan is extended from it), and its records are those of an
// in-order derivation.
func TestColdReplayPlansTheTableOnce(t *testing.T) {
	tbl := buildMorHistory(t, 90)
	hist, err := changelog.MainHistory(tbl.Metadata())
	if err != nil {
		t.Fatal(err)
	}
	want := replayHistory(t, tbl, Options{PlanCache: NewPlanCache(4, 1<<18)})

	cache, counts := coldReplay(t, tbl, hist, 8)
	if n := cache.FullPlans(); n != 0 {
		t.Errorf("a cold replay from the start ran the planner %d times, want 0", n)
	}
	for i := range hist {
		if n := sumOps(want[i]); counts[i] != n {
			t.Errorf("snapshot %d: %d records, in order %d", i, counts[i], n)
		}
	}

	from := len(hist) - 20 // more than maxPlanSteps snapshots after the first
	cache, counts = coldReplay(t, tbl, hist[from:], 8)
	if n := cache.FullPlans(); n != 1 {
		t.Errorf("a cold replay of the last 20 of %d snapshots ran the planner %d times, want 1", len(hist), n)
	}
	for i := range counts {
		if n := sumOps(want[from+i]); counts[i] != n {
			t.Errorf("snapshot %d: %d records, in order %d", from+i, counts[i], n)
		}
	}
}

func sumOps(m map[changelog.Op]int) int {
	n := 0
	for _, c := range m {
		n += c
	}
	return n
}

// BenchmarkColdReplay derives the last 100 snapshots of a history of 200
// and of 1000 (LAKEGW_BENCH_HISTORY overrides the longer) with a cold plan
// cache, 8 at a time: the time per snapshot must not grow with the history.
func BenchmarkColdReplay(b *testing.B) {
	long := 1000
	if v, err := strconv.Atoi(os.Getenv("LAKEGW_BENCH_HISTORY")); err == nil && v > 100 {
		long = v
	}
	if checkPlans {
		b.Skip("built with lakegw_checkplans: every extended plan is checked by planning it in full, not what is measured")
	}
	for _, n := range []int{200, long} {
		// Built once: a sub-benchmark's function runs again for each b.N.
		built := time.Now()
		tbl := buildMorHistory(b, n)
		b.Logf("built %d snapshots in %v", n, time.Since(built).Round(time.Millisecond))
		b.Run(fmt.Sprintf("history=%d", n), func(b *testing.B) {
			hist, err := changelog.MainHistory(tbl.Metadata())
			if err != nil {
				b.Fatal(err)
			}
			tail := hist[len(hist)-100:]
			b.ResetTimer()
			for range b.N {
				coldReplay(b, tbl, tail, 8)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(tail)), "ns/snapshot")
		})
	}
}
