package derive

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/lakegw/lakegw/changelog"
	icefiles "github.com/lakegw/lakegw/lake/files"
)

// rowDeltaCommit commits, in one snapshot, a new data file of the rows and
// file-scoped position deletes (lake/files, as lakegw's writers and Iceberg
// Java write them) of the given positions of data files.
func rowDeltaCommit(t testing.TB, tbl *table.Table, rows string, deletes map[string][]int64) (*table.Table, string) {
	t.Helper()
	ctx := context.Background()
	tx := tbl.NewTransaction()
	rd := tx.NewRowDelta(nil)
	var added string
	if rows != "" {
		rec := recordFromJSON(t, tbl, rows)
		for f, err := range table.WriteRecords(ctx, tbl, rec.Schema(), batchesOf(rec)) {
			if err != nil {
				t.Fatal(err)
			}
			added = f.FilePath()
			rd.AddRows(f)
		}
		rec.Release()
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wfs, ok := fsys.(icebergio.WriteFileIO)
	if !ok {
		t.Fatal("table file IO is read-only")
	}
	locs, err := tbl.LocationProvider()
	if err != nil {
		t.Fatal(err)
	}
	for dataPath, positions := range deletes {
		df, _, err := icefiles.WritePositionDeletes(wfs, tbl.Spec(), locs.NewDataLocation(uuid.NewString()+"-deletes.parquet"), dataPath, positions)
		if err != nil {
			t.Fatal(err)
		}
		rd.AddDeletes(df)
	}
	if err := rd.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if tbl, err = tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	return tbl, added
}

// TestRowGroupCacheBeforeImages derives a merge-on-read history whose
// snapshots delete densely from some row groups of a file of several (read
// whole and cached), sparsely from another (read selectively), and
// densely from the file the previous snapshot added (cached when it was
// read as an insert). Every snapshot must replay to the rows an Iceberg
// scan reads, with records byte for byte those derived without the cache
// (offsets must not depend on what a gateway cached), and the later
// snapshots must find their before-images cached.
func TestRowGroupCacheBeforeImages(t *testing.T) {
	ctx := context.Background()
	cat := newTestCatalog(t)
	tbl := createTable(t, cat, "row_group_cache", testSchema(), catalog.WithProperties(iceberg.Properties{
		"format-version": "2", "write.parquet.row-group-limit": "300", "write.parquet.page-row-limit": "50",
	}))
	tbl = appendJSON(t, tbl, jsonRows(0, 1000), 0)
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != 1 {
		t.Fatalf("%d files, want 1", len(tasks))
	}
	fileA := tasks[0].File.FilePath()
	var previous string
	for k := range 4 {
		dels := map[string][]int64{}
		for p := int64(k); p < 600; p += 10 {
			dels[fileA] = append(dels[fileA], p) // groups 0 and 1: one row in ten
		}
		dels[fileA] = append(dels[fileA], int64(600+7*k)) // group 2: one row of 300
		if previous != "" {
			for p := int64(k % 2); p < 40; p += 4 {
				dels[previous] = append(dels[previous], p)
			}
		}
		from := 1000 + 40*k
		tbl, previous = rowDeltaCommit(t, tbl, jsonRows(from, from+40), dels)
	}

	cache := NewRowGroupCache(1 << 20)
	replayHistory(t, tbl, Options{RowGroups: cache})
	hits, misses, held := cache.Stats()
	t.Logf("row group cache: %d hits, %d misses, %d bytes", hits, misses, held)
	// Snapshots 2-4 find groups 0 and 1 of the first file and the
	// previous snapshot's file cached.
	if hits < 3*3 {
		t.Errorf("%d hits, want at least 9", hits)
	}

	hist, err := changelog.MainHistory(tbl.Metadata())
	if err != nil {
		t.Fatal(err)
	}
	f, _ := changelog.FormatByName("debezium-json")
	encode := func(c *changelog.Changes) []byte {
		var out []byte
		for i := range c.Records {
			out, _ = f.AppendKey(out, c, &c.Records[i])
			out, _ = f.AppendValue(out, c, &c.Records[i])
			out = append(out, '\n')
		}
		return out
	}
	cold := NewRowGroupCache(1 << 20)
	for i, snap := range hist {
		plain, err := Derive(ctx, tbl, snap, Options{})
		if err != nil {
			t.Fatal(err)
		}
		cached, err := Derive(ctx, tbl, snap, Options{RowGroups: cold})
		if err != nil {
			t.Fatal(err)
		}
		if a, b := encode(plain), encode(cached); !bytes.Equal(a, b) {
			t.Errorf("snapshot %d: records differ with the cache:\n%s\nwithout:\n%s", i, b, a)
		}
		plain.Release()
		cached.Release()
	}
}

// TestRowGroupCacheEviction checks the eviction order: a table's oldest
// file goes first and a group older than every cached one of its table is
// not admitted; another table's group displaces the least recently used;
// groups no derivation used for a while go before all of that; a cached
// batch stays valid for a reader holding it after its eviction.
func TestRowGroupCacheEviction(t *testing.T) {
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "v", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	batch := func(v int64) arrow.RecordBatch {
		b := array.NewInt64Builder(memory.DefaultAllocator)
		defer b.Release()
		for range 100 {
			b.Append(v)
		}
		col := b.NewArray()
		defer col.Release()
		return array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil), []arrow.Array{col}, 100)
	}
	one := batch(0)
	size := changelog.BatchBytes(one)
	one.Release()
	c := NewRowGroupCache(3 * size)
	add := func(v rowGroups, path string, seq int64) {
		b := batch(seq)
		v.add(path, 0, seq, sc, b)
		b.Release()
	}
	has := func(path string) bool {
		b, ok := (rowGroups{c: c}).get(path, 0, sc)
		if ok {
			b.Release()
		}
		return ok
	}

	d1 := c.derivation("A")
	add(d1, "a1", 1)
	add(d1, "a2", 2)
	add(d1, "a3", 3)
	held, ok := d1.get("a1", 0, sc)
	if !ok {
		t.Fatal("a1 not cached")
	}
	want := func(step string, present ...string) {
		t.Helper()
		var got []string
		for _, p := range []string{"a0", "a1", "a2", "a3", "a4", "b1", "b2"} {
			if has(p) {
				got = append(got, p)
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(present) {
			t.Errorf("%s: cached %v, want %v", step, got, present)
		}
	}
	// a1 is used more recently than a2 and a3, but it is the oldest file.
	add(c.derivation("A"), "a4", 4)
	want("a4 added", "a2", "a3", "a4")
	if held.NumRows() != 100 || held.Column(0).(*array.Int64).Value(99) != 1 {
		t.Errorf("evicted batch changed under its reader: %d rows", held.NumRows())
	}
	held.Release()
	add(c.derivation("A"), "a0", 0)
	want("a0 offered", "a2", "a3", "a4")
	// Table B has nothing cached: the least recently used group goes
	// (a2 and a3, used by the same derivation: the older file).
	add(c.derivation("B"), "b1", 100)
	want("b1 added", "a3", "a4", "b1")
	// Once a's groups have not been used for staleDerivations, they go
	// first, though b1 is B's oldest file.
	for range staleDerivations {
		c.derivation("B")
	}
	add(c.derivation("B"), "b2", 101)
	want("b2 added", "a4", "b1", "b2")
	// A schema other than the one a group was read with misses.
	other := iceberg.NewSchema(1, iceberg.NestedField{ID: 1, Name: "v", Type: iceberg.PrimitiveTypes.Int64})
	if _, ok := (rowGroups{c: c}).get("b2", 0, other); ok {
		t.Error("a group read with another schema was served")
	}
	if _, _, bytes := c.Stats(); bytes != 3*size {
		t.Errorf("cache holds %d bytes, want %d", bytes, 3*size)
	}
}

// TestRowGroupCacheWaitsForADecode checks that a derivation missing a group
// another one is decoding waits for it and is served the cached rows, and
// that a cancelled wait returns.
func TestRowGroupCacheWaitsForADecode(t *testing.T) {
	sc := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "v", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	c := NewRowGroupCache(1 << 20)
	first, second := c.derivation("A"), c.derivation("A")
	done := first.claim("f", 0)
	if again := second.claim("f", 0); again == nil {
		t.Fatal("nil release")
	} else {
		again() // a no-op: the first claim stands
	}
	got := make(chan bool, 1)
	go func() {
		b, ok := second.getOrWait(context.Background(), "f", 0, sc)
		if ok {
			b.Release()
		}
		got <- ok
	}()
	select {
	case <-got:
		t.Fatal("a derivation missing a group being decoded did not wait for it")
	case <-time.After(50 * time.Millisecond):
	}
	b := array.NewInt64Builder(memory.DefaultAllocator)
	b.Append(7)
	col := b.NewArray()
	b.Release()
	rec := array.NewRecordBatch(arrow.NewSchema([]arrow.Field{{Name: "v", Type: arrow.PrimitiveTypes.Int64}}, nil), []arrow.Array{col}, 1)
	col.Release()
	first.add("f", 0, 1, sc, rec)
	rec.Release()
	done()
	if !<-got {
		t.Error("the waiting derivation was not served the decoded group")
	}

	stop := first.claim("g", 0)
	defer stop()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, ok := second.getOrWait(ctx, "g", 0, sc); ok {
		t.Error("a cancelled wait was served")
	}
}
