package derive

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	icefiles "github.com/lakegw/lakegw/lake/files"

	"github.com/lakegw/lakegw/changelog"
)

// replayWithCache derives a table's history in order with a plan cache, as
// the topics watcher does, checking every snapshot against a scan.
func replayWithCache(t *testing.T, tbl *table.Table) *PlanCache {
	t.Helper()
	cache := NewPlanCache(4, 1<<20)
	replayHistory(t, tbl, Options{PlanCache: cache})
	hits, misses := cache.Stats()
	t.Logf("plan cache: %d hits, %d misses; %d plans extended", hits, misses, cache.extendedCount())
	return cache
}

func TestPlanCacheMergeOnRead(t *testing.T) {
	for _, version := range []string{"2", "3"} {
		t.Run("v"+version, func(t *testing.T) {
			tbl := mergeOnReadHistory(t, version)
			tbl = deleteWhere(t, tbl, idIn(31, 8))
			tbl = deleteWhere(t, tbl, iceberg.LessThan(iceberg.Reference("id"), int64(10))) // a whole file
			tbl = appendJSON(t, tbl, jsonRows(35, 40), 0)
			if cache := replayWithCache(t, tbl); cache.extendedCount() == 0 {
				t.Error("no plan was extended")
			}
		})
	}
}

func TestPlanCacheCopyOnWriteAndReplace(t *testing.T) {
	cat := newTestCatalog(t)
	tbl := createTable(t, cat, "cow", testSchema(), catalog.WithProperties(iceberg.Properties{"format-version": "2"}))
	tbl = appendJSON(t, tbl, jsonRows(0, 20), 5)
	tbl = deleteWhere(t, tbl, idIn(3, 12))
	tbl = appendJSON(t, tbl, jsonRows(20, 25), 0)
	tbl = deleteWhere(t, tbl, idIn(21))
	replayWithCache(t, tbl)
}

// TestPlanCacheHandWrittenDeletes commits position delete files scoped to
// a partition (no bounds), to one file by equal file_path bounds, by
// referenced_data_file, and by bounds excluding some files, together with
// new data files, then removes some.
func TestPlanCacheHandWrittenDeletes(t *testing.T) {
	ctx := context.Background()
	cat := newTestCatalog(t)
	tbl := createTable(t, cat, "hand", testSchema(), catalog.WithProperties(iceberg.Properties{"format-version": "2"}))
	tbl = appendJSON(t, tbl, jsonRows(0, 30), 10)
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, task := range tasks {
		files = append(files, task.File.FilePath())
	}
	slices.Sort(files)
	withBounds := func(df iceberg.DataFile, lower, upper, ref string) iceberg.DataFile {
		bld, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentPosDeletes, df.FilePath(), iceberg.ParquetFile,
			nil, nil, nil, df.Count(), df.FileSizeBytes())
		if err != nil {
			t.Fatal(err)
		}
		if lower != "" {
			bld.LowerBoundValues(map[int][]byte{icefiles.PosDeleteFilePathID: []byte(lower)}).UpperBoundValues(map[int][]byte{icefiles.PosDeleteFilePathID: []byte(upper)})
		}
		if ref != "" {
			bld.ReferencedDataFile(ref)
		}
		return bld.Build()
	}
	commit := func(rows string, deletes ...iceberg.DataFile) {
		t.Helper()
		tx := tbl.NewTransaction()
		rd := tx.NewRowDelta(nil)
		if rows != "" {
			rec := recordFromJSON(t, tbl, rows)
			for f, err := range table.WriteRecords(ctx, tbl, rec.Schema(), batchesOf(rec)) {
				if err != nil {
					t.Fatal(err)
				}
				rd.AddRows(f)
			}
			rec.Release()
		}
		rd.AddDeletes(deletes...)
		if err := rd.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if tbl, err = tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	a, b, c := files[0], files[1], files[2]
	commit(jsonRows(30, 35), writePositionDeletes(t, tbl, "pd1.parquet", []posDelete{{a, 1}, {b, 2}}))
	commit("", withBounds(writePositionDeletes(t, tbl, "pd2.parquet", []posDelete{{b, 3}}), b, b, ""))
	commit("", withBounds(writePositionDeletes(t, tbl, "pd3.parquet", []posDelete{{c, 4}}), "", "", c))
	lo, hi := min(a, c), max(a, c)
	commit(jsonRows(35, 37), withBounds(writePositionDeletes(t, tbl, "pd4.parquet", []posDelete{{a, 5}, {c, 5}}), lo, hi, ""))
	// Remove a data file (copy-on-write delete of all its rows), whose
	// delete files stay live.
	tbl = deleteWhere(t, tbl, iceberg.NewAnd(
		iceberg.GreaterThanEqual(iceberg.Reference("id"), int64(30)), iceberg.LessThan(iceberg.Reference("id"), int64(35))))
	commit(jsonRows(40, 41))
	// Empty files, which the planner skips: a data file and a position
	// delete file of no rows, next to a real delete.
	empty, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentData, tbl.Location()+"/data/empty.parquet",
		iceberg.ParquetFile, nil, nil, nil, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.NewRowDelta(nil).AddRows(empty.Build()).AddDeletes(
		withBounds(writePositionDeletes(t, tbl, "pd5.parquet", nil), "", "", b),
		writePositionDeletes(t, tbl, "pd6.parquet", []posDelete{{b, 7}}),
		// Partition-scoped, its bounds exclude a and b.
		withBounds(writePositionDeletes(t, tbl, "pd7.parquet", []posDelete{{c, 6}}), c, c+"~", ""),
	).Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if tbl, err = tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	replayWithCache(t, tbl)
}

// TestPlanCacheEqualityDeletes: the planner plans snapshots that add
// equality deletes; the cache stays correct.
func TestPlanCacheEqualityDeletes(t *testing.T) {
	ctx := context.Background()
	cat := newTestCatalog(t)
	tbl := createTable(t, cat, "eq", testSchema(), catalog.WithProperties(iceberg.Properties{"format-version": "2"}))
	tbl = appendJSON(t, tbl, jsonRows(0, 10), 5)
	for i, ids := range [][]int64{{1, 2}, {7}, {3, 8}} {
		tx := tbl.NewTransaction()
		rd := tx.NewRowDelta(nil)
		eqSchema, err := table.SchemaToArrowSchema(mustSelect(t, tbl.Schema(), []int{1}), nil, false, false)
		if err != nil {
			t.Fatal(err)
		}
		js := "["
		for j, id := range ids {
			if j > 0 {
				js += ","
			}
			js += fmt.Sprintf(`{"id":%d}`, id)
		}
		rec := recordFromJSONSchema(t, eqSchema, js+"]")
		files, err := tx.WriteEqualityDeletes(ctx, []int{1}, batchesOf(rec))
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
		rd.AddDeletes(files...)
		if err := rd.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if tbl, err = tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		tbl = appendJSON(t, tbl, jsonRows(100+10*i, 105+10*i), 0)
	}
	tbl = deleteWhere(t, tbl, idIn(4))
	replayWithCache(t, tbl)
}

// TestPlanCacheFixtures derives every fixture table in order with a plan
// cache: the same events as without.
func TestPlanCacheFixtures(t *testing.T) {
	for _, f := range fixtures {
		if f.damaged != "" {
			continue
		}
		t.Run(f.name, func(t *testing.T) {
			tbl := openFixture(t, f)
			hist, err := changelog.MainHistory(tbl.Metadata())
			if err != nil {
				t.Fatal(err)
			}
			cache := NewPlanCache(2, 1<<20)
			ws, gs := rowMultiset{}, rowMultiset{}
			var schema *iceberg.Schema
			for _, snap := range hist {
				want, err := Derive(context.Background(), tbl, snap, Options{})
				if err != nil {
					t.Fatal(err)
				}
				got, err := Derive(context.Background(), tbl, snap, Options{PlanCache: cache})
				if err != nil {
					t.Fatal(err)
				}
				if w, g := countOps(want), countOps(got); !equalCounts(w, g) {
					t.Errorf("snapshot %d: events %v with the cache, %v without", snap.SnapshotID, g, w)
				}
				ws = rekeyByID(t, ws, schema, want.Schema)
				gs = rekeyByID(t, gs, schema, got.Schema)
				schema = want.Schema
				applyChanges(t, ws, want)
				applyChanges(t, gs, got)
				compareMultisets(t, fmt.Sprintf("snapshot %d", snap.SnapshotID), ws, gs)
				want.Release()
				got.Release()
			}
			hits, misses := cache.Stats()
			t.Logf("plan cache: %d hits, %d misses", hits, misses)
		})
	}
}

func TestPlanCacheBounds(t *testing.T) {
	c := NewPlanCache(2, 5)
	id := func(n int64) planKey { return planKey{snapshot: n} }
	plan := func(n int) livePlan {
		p := livePlan{}
		for i := range n {
			p[fmt.Sprint(i)] = table.FileScanTask{}
		}
		return p
	}
	c.put(id(1), plan(2))
	c.put(id(2), plan(2))
	c.put(id(3), plan(2)) // over 2 plans: 1 goes
	if c.has(id(1)) || !c.has(id(2)) || !c.has(id(3)) {
		t.Fatal("plan count bound")
	}
	c.put(id(4), plan(4)) // over 5 files: 2 and 3 go
	if c.has(id(2)) || c.has(id(3)) || !c.has(id(4)) || c.files != 4 {
		t.Fatalf("file bound: %d files", c.files)
	}
	c.put(id(5), plan(6)) // larger than the cache
	if c.has(id(5)) || !c.has(id(4)) {
		t.Fatal("oversized plan")
	}
	var nilCache *PlanCache
	nilCache.put(id(1), plan(1))
	if _, ok := nilCache.get(id(1)); ok {
		t.Fatal("nil cache")
	}
}

// A snapshot read whole (a compacted prefix) uses a cached plan when there
// is one, and otherwise plans it without caching it: its rows are what the
// changes cache keeps, and a cached full plan per expiry was the largest
// growing part of a streaming gateway's heap.
func TestReadSnapshotLeavesNoPlanInTheCache(t *testing.T) {
	ctx := context.Background()
	cat := newTestCatalog(t)
	tbl := createTable(t, cat, "prefix", testSchema(), catalog.WithProperties(iceberg.Properties{"format-version": "2"}))
	tbl = appendJSON(t, tbl, jsonRows(0, 30), 10)
	tbl = appendJSON(t, tbl, jsonRows(30, 40), 0)
	hist, err := changelog.MainHistory(tbl.Metadata())
	if err != nil {
		t.Fatal(err)
	}
	cache := NewPlanCache(8, 1000)
	last := hist[len(hist)-1]
	c, err := ReadSnapshot(ctx, tbl, last, Options{PlanCache: cache})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Records) != 40 {
		t.Fatalf("%d rows read, want 40", len(c.Records))
	}
	key := planKeyFor(tbl, tbl.Metadata().SnapshotByID(last.SnapshotID))
	if cache.has(key) || cache.FullPlans() != 1 {
		t.Fatalf("after a read whole: plan cached %v, %d full plans", cache.has(key), cache.FullPlans())
	}
	if _, err := planSnapshot(ctx, tbl, last.SnapshotID, cache); err != nil {
		t.Fatal(err)
	}
	if !cache.has(key) {
		t.Fatal("planning for a derivation did not cache the plan")
	}
	plans := cache.FullPlans()
	if _, err := ReadSnapshot(ctx, tbl, last, Options{PlanCache: cache}); err != nil {
		t.Fatal(err)
	}
	if cache.FullPlans() != plans {
		t.Fatal("a read whole planned again what the cache holds")
	}
}
