package lsm

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/rs/zerolog"

	"github.com/lakegw/lakegw/changelog"
	"github.com/lakegw/lakegw/derive"
	"github.com/lakegw/lakegw/internal/lsmmodel"
	"github.com/lakegw/lakegw/lake"
	icefiles "github.com/lakegw/lakegw/lake/files"
)

// testSchema: id long (key), name string, qty long, price double.
var testSchema = lsmmodel.Schema

func testCatalog(t testing.TB, dir string) catalog.Catalog {
	t.Helper()
	ctx := context.Background()
	cat, err := lake.OpenCatalog(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = cat.CreateNamespace(ctx, table.Identifier{"ns"}, nil)
	return cat
}

func createTestTable(t testing.TB, cat catalog.Catalog, name string, co CreateOptions, opts Options) *Table {
	t.Helper()
	if len(co.PrimaryKey) == 0 {
		co.PrimaryKey = []string{"id"}
	}
	if opts.Log.GetLevel() == zerolog.DebugLevel && false {
		opts.Log = zerolog.New(zerolog.NewTestWriter(t))
	}
	tb, err := Create(context.Background(), cat, table.Identifier{"ns", name}, testSchema, co, opts)
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// scanRows reads the table's current snapshot with iceberg-go's scanner
// (deletes applied) and renders each row as "id|name|qty|price".
func scanRows(t testing.TB, cat catalog.Catalog, ident table.Identifier) map[string]string {
	t.Helper()
	tbl, err := cat.LoadTable(context.Background(), ident)
	if err != nil {
		t.Fatal(err)
	}
	if tbl.CurrentSnapshot() == nil {
		return map[string]string{}
	}
	return scanRowsAt(t, tbl, tbl.CurrentSnapshot().SnapshotID)
}

// scanRowsAt is scanRows of one snapshot.
func scanRowsAt(t testing.TB, tbl *table.Table, snapID int64) map[string]string {
	t.Helper()
	ctx := context.Background()
	out := map[string]string{}
	_, it, err := tbl.Scan(table.WithSnapshotID(snapID)).ToArrowRecords(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for rec, err := range it {
		if err != nil {
			t.Fatal(err)
		}
		for r := 0; r < int(rec.NumRows()); r++ {
			row := renderArrowRow(t, rec, r)
			id := strings.SplitN(row, "|", 2)[0]
			if prev, dup := out[id]; dup {
				t.Fatalf("key %s twice in the scan: %s and %s", id, prev, row)
			}
			out[id] = row
		}
		rec.Release()
	}
	return out
}

func renderArrowRow(t testing.TB, rec arrow.RecordBatch, r int) string {
	t.Helper()
	parts := make([]string, rec.NumCols())
	for c := range parts {
		v, err := valueAt(rec.Column(c), r)
		if err != nil {
			t.Fatal(err)
		}
		parts[c] = renderValue(v)
	}
	return strings.Join(parts, "|")
}

func renderValue(v any) string {
	if v == nil {
		return "null"
	}
	return fmt.Sprint(v)
}

func renderMap(m map[string]any) string {
	return strings.Join([]string{renderValue(m["id"]), renderValue(m["name"]), renderValue(m["qty"]), renderValue(m["price"])}, "|")
}

// snapshotRef is the main-history entry of snapshot id.
func snapshotRef(t testing.TB, tbl *table.Table, id int64) changelog.SnapshotRef {
	t.Helper()
	hist, err := changelog.MainHistory(tbl.Metadata())
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hist {
		if h.SnapshotID == id {
			return h
		}
	}
	t.Fatalf("snapshot %d is not in the main history", id)
	return changelog.SnapshotRef{}
}

// deriveEvents derives the change events of snapshot snapID of the table and
// renders them per partition as "op before -> after".
func deriveEvents(t testing.TB, tbl *table.Table, snapID int64) []string {
	t.Helper()
	ctx := context.Background()
	ref := snapshotRef(t, tbl, snapID)
	parts := int32(tbl.Properties().GetInt(PropPartitions, 1))
	c, err := derive.Derive(ctx, tbl, ref, derive.Options{Partitions: parts})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	var out []string
	for _, rec := range c.Records {
		s := fmt.Sprintf("p%d %s", rec.Partition, rec.Op.Header())
		if rec.Before.Valid() {
			s += " " + renderArrowRow(t, c.Batches[rec.Before.Batch], int(rec.Before.Row))
		}
		if rec.After.Valid() {
			s += " -> " + renderArrowRow(t, c.Batches[rec.After.Batch], int(rec.After.Row))
		}
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

// historyIDs lists the main-branch snapshot ids, oldest first.
func historyIDs(t testing.TB, tbl *table.Table) []int64 {
	t.Helper()
	hist, err := changelog.MainHistory(tbl.Metadata())
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int64, len(hist))
	for i, h := range hist {
		out[i] = h.SnapshotID
	}
	return out
}

// formatVersions are the table format versions the table-driven tests run
// on: v2 deletes replaced rows with position delete files, v3 with
// deletion vectors.
var formatVersions = []int{2, 3}

// deleteLayout is what checkDeleteLayout found in the current snapshot.
type deleteLayout struct {
	dvs, posDeleteFiles, eqDeleteFiles int
	// dvOf maps each data file with a DV to the DV (path@offset).
	dvOf map[string]string
}

// checkDeleteLayout reads the live manifest entries of the table's current
// snapshot and checks the delete files against the format version: v2
// tables have position delete files and no DVs; v3 tables have DVs only
// (no position delete files, no equality deletes), at most one per data
// file, each for a live data file. No version has equality deletes.
func checkDeleteLayout(t testing.TB, cat catalog.Catalog, ident table.Identifier, version int) deleteLayout {
	t.Helper()
	tbl, err := cat.LoadTable(context.Background(), ident)
	if err != nil {
		t.Fatal(err)
	}
	return checkDeleteLayoutAt(t, tbl, tbl.CurrentSnapshot(), version)
}

// checkDeleteLayoutAt is checkDeleteLayout of one snapshot (nil: none).
func checkDeleteLayoutAt(t testing.TB, tbl *table.Table, snap *table.Snapshot, version int) deleteLayout {
	t.Helper()
	ctx := context.Background()
	if got := tbl.Metadata().Version(); got != version {
		t.Fatalf("table format version %d, want %d", got, version)
	}
	out := deleteLayout{dvOf: map[string]string{}}
	if snap == nil {
		return out
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mans, err := snap.Manifests(fs)
	if err != nil {
		t.Fatal(err)
	}
	live := map[string]bool{}
	var dvs []iceberg.DataFile
	for _, m := range mans {
		entries, err := icefiles.ManifestEntries(fs, m, true)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			df := e.DataFile()
			switch {
			case df.ContentType() == iceberg.EntryContentData:
				live[df.FilePath()] = true
			case df.ContentType() == iceberg.EntryContentEqDeletes:
				out.eqDeleteFiles++
			case table.IsDeletionVector(df):
				out.dvs++
				dvs = append(dvs, df)
			default:
				out.posDeleteFiles++
			}
		}
	}
	for _, df := range dvs {
		ref := df.ReferencedDataFile()
		if ref == nil || *ref == "" {
			t.Fatalf("snapshot %d: DV %s has no referenced data file", snap.SnapshotID, df.FilePath())
		}
		if prev, dup := out.dvOf[*ref]; dup {
			t.Fatalf("snapshot %d: data file %s has two live DVs: %s and %s", snap.SnapshotID, *ref, prev, df.FilePath())
		}
		if !live[*ref] {
			t.Fatalf("snapshot %d: DV %s references %s, which is not a live data file", snap.SnapshotID, df.FilePath(), *ref)
		}
		out.dvOf[*ref] = fmt.Sprintf("%s@%d", df.FilePath(), *df.ContentOffset())
	}
	if out.eqDeleteFiles > 0 {
		t.Fatalf("snapshot %d has %d equality delete files", snap.SnapshotID, out.eqDeleteFiles)
	}
	switch version {
	case 2:
		if out.dvs > 0 {
			t.Fatalf("v2 snapshot %d has %d deletion vectors", snap.SnapshotID, out.dvs)
		}
	case 3:
		if out.posDeleteFiles > 0 {
			t.Fatalf("v3 snapshot %d has %d position delete files", snap.SnapshotID, out.posDeleteFiles)
		}
	}
	return out
}

// replacedDVs counts the data files live in both layouts whose DV changed.
func replacedDVs(before, after deleteLayout) int {
	n := 0
	for data, dv := range before.dvOf {
		if now, ok := after.dvOf[data]; ok && now != dv {
			n++
		}
	}
	return n
}
