package maintain_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/rs/zerolog"

	"github.com/lakegw/lakegw/maintain"
	"github.com/lakegw/lakegw/quickstart"
)

// idsTable creates an unpartitioned merge-on-read table of one id column.
func idsTable(t *testing.T, cat catalog.Catalog) table.Identifier {
	t.Helper()
	ctx := context.Background()
	ident := table.Identifier{"ns", "ids"}
	if err := cat.CreateNamespace(ctx, catalog.NamespaceFromIdent(ident), nil); err != nil {
		t.Fatal(err)
	}
	schema := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	props := iceberg.Properties{"format-version": "2", table.WriteDeleteModeKey: table.WriteModeMergeOnRead}
	if _, err := cat.CreateTable(ctx, ident, schema, catalog.WithProperties(props)); err != nil {
		t.Fatal(err)
	}
	return ident
}

// appendIDs commits one data file holding the ids.
func appendIDs(t *testing.T, cat catalog.Catalog, ident table.Identifier, ids ...int64) {
	t.Helper()
	ctx := context.Background()
	sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	b := array.NewInt64Builder(memory.DefaultAllocator)
	b.AppendValues(ids, nil)
	col := b.NewArray()
	rec := array.NewRecordBatch(sc, []arrow.Array{col}, int64(len(ids)))
	col.Release()
	tab := array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
	rec.Release()
	defer tab.Release()
	tx := loadTable(t, cat, ident).NewTransaction()
	if err := tx.AppendTable(ctx, tab, int64(len(ids)), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatalf("append %v: %v", ids, err)
	}
}

func deleteID(t *testing.T, cat catalog.Catalog, ident table.Identifier, id int64) {
	t.Helper()
	tx := loadTable(t, cat, ident).NewTransaction()
	if err := tx.Delete(context.Background(), iceberg.EqualTo(iceberg.Reference("id"), id), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(context.Background()); err != nil {
		t.Fatalf("delete %d: %v", id, err)
	}
}

func scanIDs(t *testing.T, tbl *table.Table) []int64 {
	t.Helper()
	var out []int64
	for r := range scanAll(t, tbl, 0) {
		id, err := strconv.ParseInt(r, 10, 64)
		if err != nil {
			t.Fatalf("row %q: %v", r, err)
		}
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// TestCompactionRacesWriters commits another writer's snapshot between a
// compaction's rewrite and its commit. An append leaves the rewritten
// files' rows as they were: the compaction commits the same rewrite on the
// new head. A delete in a rewritten file changes them: the rows are
// rewritten again. Either way the table ends with the right rows.
func TestCompactionRacesWriters(t *testing.T) {
	ctx := context.Background()
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	for _, tc := range []struct {
		name     string
		race     func(t *testing.T, cat catalog.Catalog, ident table.Identifier)
		rewrites int
		want     []int64
	}{
		{"append", func(t *testing.T, cat catalog.Catalog, ident table.Identifier) { appendIDs(t, cat, ident, 100) }, 1,
			[]int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14, 15, 16, 17, 18, 19, 100}},
		// A position delete on the file of 3 and 13.
		{"delete", func(t *testing.T, cat catalog.Catalog, ident table.Identifier) { deleteID(t, cat, ident, 3) }, 2,
			[]int64{1, 2, 4, 5, 6, 7, 8, 9, 11, 12, 13, 14, 15, 16, 17, 18, 19}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cat, _ := openCatalog(t)
			ident := idsTable(t, cat)
			for id := int64(1); id <= 9; id++ {
				appendIDs(t, cat, ident, id, id+10)
			}
			raced := false
			race := func(context.Context) {
				if !raced {
					raced = true
					tc.race(t, cat, ident)
				}
			}
			rep, err := maintain.Run(ctx, cat, ident, maintain.Options{Log: log, CompactDataFiles: 4, BeforeCompactionCommit: race})
			if err != nil {
				t.Fatal(err)
			}
			c := rep.Compaction
			if c.Skipped != "" || c.Rewrites != tc.rewrites || c.SnapshotID == 0 {
				t.Fatalf("compaction %+v; want committed after %d rewrites", c, tc.rewrites)
			}
			tbl := loadTable(t, cat, ident)
			if got := scanIDs(t, tbl); !slices.Equal(got, tc.want) {
				t.Fatalf("rows after the raced compaction: %v, want %v", got, tc.want)
			}
			// The superseded rewrite's files are gone, not left as orphans.
			plan, err := tbl.PlanOrphanFiles(ctx, table.WithFilesOlderThan(0))
			if err != nil {
				t.Fatal(err)
			}
			if files := plan.Files(); len(files) != 0 {
				t.Fatalf("compaction left unreferenced files: %v", files)
			}
		})
	}
}

// TestBoundedCompactionKeepsDeletesOfFilesLeftAlone compacts a demo table
// that fell behind a rewrite of a few files at a time. The demo writes one
// position delete file per commit, for rows of several data files: one
// that also deletes rows of a file the rewrite leaves alone must stay, or
// those rows come back. Every pass is checked against the demo's own
// bookkeeping, by an iceberg-go scan.
func TestBoundedCompactionKeepsDeletesOfFilesLeftAlone(t *testing.T) {
	ctx := context.Background()
	cat, d, log := agedDemo(t, 60)
	ident := quickstart.DefaultTable()
	rewrote := 0
	for pass := 1; pass <= 12; pass++ {
		rep, err := maintain.Run(ctx, cat, ident, maintain.Options{Log: log, SkipOrphans: true, MaxCompactFiles: 4, CompactDataFiles: 8, CompactDeleteFiles: 8})
		if err != nil {
			t.Fatalf("pass %d: %v", pass, err)
		}
		if rep.Compaction.Skipped == "" {
			rewrote++
			if rep.Compaction.DataFilesRewritten > 4 {
				t.Fatalf("pass %d rewrote %d data files, want at most 4", pass, rep.Compaction.DataFilesRewritten)
			}
		}
		live, err := d.LiveRows(ctx)
		if err != nil {
			t.Fatal(err)
		}
		requireSameOrders(t, fmt.Sprintf("after bounded compaction pass %d", pass), live, d.Expected())
	}
	if rewrote < 3 {
		t.Fatalf("%d bounded rewrites in 12 passes: the test proves nothing", rewrote)
	}
}

// TestBoundedCompactionKeepsSharedDeletes deletes rows of several data
// files in one commit, as a merge-on-read writer does (one position delete
// file for them all), and compacts one file at a time: the delete file
// also applies to files the rewrite leaves alone, so it must stay until
// the last of them is rewritten, or their deleted rows come back.
func TestBoundedCompactionKeepsSharedDeletes(t *testing.T) {
	ctx := context.Background()
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	cat, _ := openCatalog(t)
	ident := idsTable(t, cat)
	var want []int64
	for id := int64(1); id <= 6; id++ {
		appendIDs(t, cat, ident, id, id+10)
		want = append(want, id+10)
	}
	tx := loadTable(t, cat, ident).NewTransaction()
	if err := tx.Delete(ctx, iceberg.LessThan(iceberg.Reference("id"), int64(10)), nil); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	slices.Sort(want)
	rewrote := 0
	for pass := 1; pass <= 8; pass++ {
		rep, err := maintain.Run(ctx, cat, ident, maintain.Options{Log: log, SkipOrphans: true, MaxCompactFiles: 1, CompactDataFiles: 1, CompactDeleteFiles: 1})
		if err != nil {
			t.Fatalf("pass %d: %v", pass, err)
		}
		if rep.Compaction.Skipped == "" {
			rewrote++
		}
		if got := scanIDs(t, loadTable(t, cat, ident)); !slices.Equal(got, want) {
			t.Fatalf("after bounded compaction pass %d (%+v): rows %v, want %v", pass, rep.Compaction, got, want)
		}
	}
	if rewrote < 2 {
		t.Fatalf("%d bounded rewrites: the test proves nothing", rewrote)
	}
}
