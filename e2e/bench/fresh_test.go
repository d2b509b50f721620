package main

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime/pprof"
	"testing"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/changelog"
	"github.com/lakegw/lakegw/derive"
	"github.com/lakegw/lakegw/lake"
)

// BenchmarkNewSnapshot is the gateway's work between a commit and the
// wake-up of waiting consumers, on a table with a growing history of small
// snapshots (10 changes each, as the freshness measurement commits): load
// the table metadata, list the main history, derive the new snapshot.
// Commit-to-consume latency grows with history when this does.
func BenchmarkNewSnapshot(b *testing.B) { benchNewSnapshot(b, false) }

// BenchmarkNewSnapshotCached is BenchmarkNewSnapshot as the topics watcher
// runs it: the parent snapshot was derived just before with the topic's
// plan cache (untimed, a fresh cache per iteration so the new snapshot's
// own plan is never cached).
func BenchmarkNewSnapshotCached(b *testing.B) { benchNewSnapshot(b, true) }

func benchNewSnapshot(b *testing.B, cached bool) {
	ctx := context.Background()
	dir := filepath.Join(b.TempDir(), "fresh")
	cat, err := lake.OpenCatalog(ctx, dir, nil)
	if err != nil {
		b.Fatal(err)
	}
	ident := table.Identifier{"bench", "fresh"}
	gen, err := newTableGen(ctx, cat, ident, 3, nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, snaps := range []int{10, 50, 200} {
		for gen.Snapshots < snaps {
			if err := gen.commit(ctx, 10); err != nil {
				b.Fatal(err)
			}
		}
		b.Run(fmt.Sprintf("snapshots=%d", snaps), func(b *testing.B) {
			var load, deriving float64
			for b.Loop() {
				var cache *derive.PlanCache
				if cached {
					b.StopTimer()
					cache = derive.NewPlanCache(4, 1<<18)
					derivePrevious(b, ctx, cat, ident, cache)
					b.StartTimer()
				}
				c0 := processCPU()
				tbl, err := cat.LoadTable(ctx, ident)
				if err != nil {
					b.Fatal(err)
				}
				hist, err := changelog.MainHistory(tbl.Metadata())
				if err != nil {
					b.Fatal(err)
				}
				c1 := processCPU()
				var c *changelog.Changes
				pprof.Do(ctx, pprof.Labels("phase", "derive-new-snapshot"), func(ctx context.Context) {
					c, err = derive.Derive(ctx, tbl, hist[len(hist)-1], derive.Options{PlanCache: cache})
				})
				if err != nil {
					b.Fatal(err)
				}
				c.Release()
				load += float64((c1 - c0).Microseconds())
				deriving += float64((processCPU() - c1).Microseconds())
			}
			b.ReportMetric(load/float64(b.N)/1000, "load-cpu-ms/op")
			b.ReportMetric(deriving/float64(b.N)/1000, "derive-cpu-ms/op")
		})
	}
}

// derivePrevious derives the parent of the newest snapshot into cache.
func derivePrevious(b *testing.B, ctx context.Context, cat catalog.Catalog, ident table.Identifier, cache *derive.PlanCache) {
	b.Helper()
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		b.Fatal(err)
	}
	hist, err := changelog.MainHistory(tbl.Metadata())
	if err != nil {
		b.Fatal(err)
	}
	p, err := derive.Derive(ctx, tbl, hist[len(hist)-2], derive.Options{PlanCache: cache})
	if err != nil {
		b.Fatal(err)
	}
	p.Release()
}
