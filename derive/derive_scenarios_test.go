package derive

import (
	"context"
	"fmt"
	"iter"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/changelog"
)

// replayHistory derives every snapshot of the table's main history, replays
// the events onto a multiset and compares it with an iceberg-go scan of
// each snapshot. It returns the event counts by op of each snapshot.
func replayHistory(t *testing.T, tbl *table.Table, opts Options) []map[changelog.Op]int {
	t.Helper()
	hist, err := changelog.MainHistory(tbl.Metadata())
	if err != nil {
		t.Fatal(err)
	}
	state := rowMultiset{}
	var out []map[changelog.Op]int
	var schema *iceberg.Schema
	for i, snap := range hist {
		c, err := Derive(context.Background(), tbl, snap, opts)
		if err != nil {
			t.Fatalf("snapshot %d (%s): %v", i, snap.Operation, err)
		}
		state = rekeyByID(t, state, schema, c.Schema)
		schema = c.Schema
		for j, r := range c.Records {
			if p := r.Partition; p < 0 || p >= max(opts.Partitions, 1) {
				t.Fatalf("snapshot %d record %d in partition %d", i, j, p)
			}
			if r.Op == changelog.OpUpdate && opts.Partitions > 1 {
				f, _ := changelog.FormatByName("debezium-json")
				before := changelog.Record{Op: changelog.OpDelete, Before: r.Before, After: changelog.NoRow}
				kb, _ := f.AppendKey(nil, c, &before)
				ka, _ := f.AppendKey(nil, c, &c.Records[j])
				if string(kb) != string(ka) {
					t.Fatalf("update changes the key: %s -> %s", kb, ka)
				}
			}
		}
		applyChanges(t, state, c)
		ops := countOps(c)
		out = append(out, ops)
		t.Logf("snapshot %d %s: %v", i, snap.Operation, ops)
		c.Release()
		oracle := scanRows(t, tbl, snap.SnapshotID)
		compareMultisets(t, fmt.Sprintf("snapshot %d (%s)", i, snap.Operation), oracle, state)
		// The compacted prefix at this snapshot holds the same rows.
		prefix, err := ReadSnapshot(context.Background(), tbl, snap, opts)
		if err != nil {
			t.Fatalf("read snapshot %d: %v", i, err)
		}
		if n := countOps(prefix); n[changelog.OpRead] != len(prefix.Records) {
			t.Errorf("prefix of snapshot %d has ops %v", i, n)
		}
		read := rowMultiset{}
		applyChanges(t, read, prefix)
		prefix.Release()
		compareMultisets(t, fmt.Sprintf("prefix at snapshot %d", i), oracle, read)
	}
	return out
}

func wantCounts(t *testing.T, got []map[changelog.Op]int, want ...map[changelog.Op]int) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d snapshots, want %d", len(got), len(want))
	}
	for i := range want {
		if !equalCounts(want[i], got[i]) {
			t.Errorf("snapshot %d: events %v, want %v", i, got[i], want[i])
		}
	}
}

func deleteWhere(t *testing.T, tbl *table.Table, filter iceberg.BooleanExpression) *table.Table {
	t.Helper()
	out, err := tbl.Delete(context.Background(), filter, nil)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func idIn(ids ...int64) iceberg.BooleanExpression {
	var e iceberg.BooleanExpression = iceberg.AlwaysFalse{}
	for _, id := range ids {
		e = iceberg.NewOr(e, iceberg.EqualTo(iceberg.Reference("id"), id))
	}
	return e
}

// mergeOnReadHistory writes a merge-on-read table of the format version:
// 30 rows in three files, three deletes by position, 5 more rows.
func mergeOnReadHistory(t *testing.T, version string) *table.Table {
	t.Helper()
	cat := newTestCatalog(t)
	tbl := createTable(t, cat, "mor", testSchema(), catalog.WithProperties(iceberg.Properties{
		"format-version": version, "write.delete.mode": "merge-on-read",
	}))
	tbl = appendJSON(t, tbl, jsonRows(0, 30), 10)
	tbl = deleteWhere(t, tbl, iceberg.LessThan(iceberg.Reference("id"), int64(5)))
	// 3 and 4 are already deleted: only 5, 6, 7 are new deletes.
	tbl = deleteWhere(t, tbl, idIn(3, 4, 5, 6, 7))
	// One row in each of the three files.
	tbl = deleteWhere(t, tbl, idIn(9, 19, 29))
	return appendJSON(t, tbl, jsonRows(30, 35), 0)
}

// testMergeOnRead deletes rows by position (format 2: position delete
// files; format 3: deletion vectors, which iceberg-go folds and replaces).
func testMergeOnRead(t *testing.T, version string) {
	tbl := mergeOnReadHistory(t, version)
	// Make sure the writer produced the delete kind under test.
	tasks, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var pos, dvs int
	for _, task := range tasks {
		pos += len(task.DeleteFiles)
		dvs += len(task.DeletionVectorFiles)
	}
	if version == "2" && (pos == 0 || dvs != 0) || version == "3" && dvs == 0 {
		t.Fatalf("format %s table has %d position delete files and %d deletion vectors", version, pos, dvs)
	}
	got := replayHistory(t, tbl, Options{})
	wantCounts(t, got,
		map[changelog.Op]int{changelog.OpInsert: 30},
		map[changelog.Op]int{changelog.OpDelete: 5},
		map[changelog.Op]int{changelog.OpDelete: 3},
		map[changelog.Op]int{changelog.OpDelete: 3},
		map[changelog.Op]int{changelog.OpInsert: 5},
	)
}

func TestDerivePositionDeletesV2(t *testing.T) { testMergeOnRead(t, "2") }

func TestDeriveDeletionVectorsV3(t *testing.T) { testMergeOnRead(t, "3") }

// TestDeriveCopyOnWriteUpdates rewrites files (iceberg-go's default
// copy-on-write): carry-over rows must not appear, and a replaced row with
// the same identifier is one update.
func TestDeriveCopyOnWriteUpdates(t *testing.T) {
	ctx := context.Background()
	cat := newTestCatalog(t)
	tbl := createTable(t, cat, "cow", testSchema())
	tbl = appendJSON(t, tbl, jsonRows(0, 20), 10)

	overwrite := func(filter iceberg.BooleanExpression, rows string) {
		rec := recordFromJSON(t, tbl, rows)
		defer rec.Release()
		data := arrowTable(rec)
		defer data.Release()
		var err error
		tbl, err = tbl.OverwriteTable(ctx, data, rec.NumRows(), nil, table.WithOverwriteFilter(filter))
		if err != nil {
			t.Fatal(err)
		}
	}
	overwrite(idIn(5), `[{"id":5,"name":"changed","amount":"1.00"}]`)
	overwrite(idIn(1, 2), `[{"id":1,"name":"changed","amount":"2.00"},{"id":100,"name":"new","amount":"3.00"}]`)
	tbl = deleteWhere(t, tbl, idIn(15))
	// An overwrite that rewrites rows unchanged is no change at all.
	overwrite(idIn(7), `[{"id":7,"name":"n0","amount":"7.07"}]`)
	for _, parts := range []int32{1, 3} {
		got := replayHistory(t, tbl, Options{Partitions: parts})
		wantCounts(t, got,
			map[changelog.Op]int{changelog.OpInsert: 20},
			map[changelog.Op]int{changelog.OpUpdate: 1},
			map[changelog.Op]int{changelog.OpUpdate: 1, changelog.OpDelete: 1, changelog.OpInsert: 1},
			map[changelog.Op]int{changelog.OpDelete: 1},
			map[changelog.Op]int{},
		)
	}
	// Without key fields an update is a delete and an insert.
	noKey := iceberg.NewSchema(0, testSchema().Fields()...)
	tbl2 := createTable(t, cat, "cow_nokey", noKey)
	tbl2 = appendJSON(t, tbl2, jsonRows(0, 20), 10)
	tbl = tbl2
	overwrite(idIn(5), `[{"id":5,"name":"changed","amount":"1.00"}]`)
	got := replayHistory(t, tbl, Options{})
	wantCounts(t, got, map[changelog.Op]int{changelog.OpInsert: 20}, map[changelog.Op]int{changelog.OpDelete: 1, changelog.OpInsert: 1})
	// Configured key columns make it an update again.
	got = replayHistory(t, tbl, Options{KeyColumns: []string{"id"}})
	wantCounts(t, got, map[changelog.Op]int{changelog.OpInsert: 20}, map[changelog.Op]int{changelog.OpUpdate: 1})
}

func arrowTable(rec arrow.RecordBatch) arrow.Table {
	return arrowTableFromRecords(rec)
}

func batchesOf(recs ...arrow.RecordBatch) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		for _, r := range recs {
			r.Retain()
			if !yield(r, nil) {
				return
			}
		}
	}
}

// TestDeriveEqualityDeletes commits equality deletes (with a data file in
// the same snapshot for an upsert, as Flink writes), on the key and on a
// nullable column with nulls.
func TestDeriveEqualityDeletes(t *testing.T) {
	ctx := context.Background()
	cat := newTestCatalog(t)
	tbl := createTable(t, cat, "eq", testSchema(), catalog.WithProperties(iceberg.Properties{"format-version": "2"}))
	tbl = appendJSON(t, tbl, `[{"id":1,"name":"a","amount":"1.00"},{"id":2,"name":null,"amount":"2.00"},
		{"id":3,"name":"c","amount":"3.00"},{"id":4,"name":null,"amount":"4.00"},{"id":5,"name":"e","amount":"5.00"}]`, 3)

	rowDelta := func(eqFields []int, deletes string, adds string) {
		tx := tbl.NewTransaction()
		rd := tx.NewRowDelta(nil)
		if deletes != "" {
			eqSchema, err := table.SchemaToArrowSchema(mustSelect(t, tbl.Schema(), eqFields), nil, false, false)
			if err != nil {
				t.Fatal(err)
			}
			rec := recordFromJSONSchema(t, eqSchema, deletes)
			defer rec.Release()
			files, err := tx.WriteEqualityDeletes(ctx, eqFields, batchesOf(rec))
			if err != nil {
				t.Fatal(err)
			}
			rd.AddDeletes(files...)
		}
		if adds != "" {
			rec := recordFromJSON(t, tbl, adds)
			defer rec.Release()
			for f, err := range table.WriteRecords(ctx, tbl, rec.Schema(), batchesOf(rec)) {
				if err != nil {
					t.Fatal(err)
				}
				rd.AddRows(f)
			}
		}
		if err := rd.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		var err error
		if tbl, err = tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// Upsert of 3 and delete of 4 (and of 9, which does not exist).
	rowDelta([]int{1}, `[{"id":3},{"id":4},{"id":9}]`, `[{"id":3,"name":"c2","amount":"3.50"}]`)
	// Delete by a nullable column: null matches null (row 2; row 4 is gone).
	rowDelta([]int{2}, `[{"name":null},{"name":"zzz"}]`, "")
	// The upserted 3 has a lower sequence number than this delete.
	rowDelta([]int{1}, `[{"id":3}]`, "")
	// Deletes matching nothing.
	rowDelta([]int{1, 2}, `[{"id":1,"name":"b"}]`, "")
	// Re-insert of a deleted key in the same snapshot as its delete.
	rowDelta([]int{1}, `[{"id":5}]`, `[{"id":5,"name":"e","amount":"5.00"}]`)
	got := replayHistory(t, tbl, Options{})
	wantCounts(t, got,
		map[changelog.Op]int{changelog.OpInsert: 5},
		map[changelog.Op]int{changelog.OpUpdate: 1, changelog.OpDelete: 1},
		map[changelog.Op]int{changelog.OpDelete: 1},
		map[changelog.Op]int{changelog.OpDelete: 1},
		map[changelog.Op]int{},
		map[changelog.Op]int{}, // deleted and re-inserted unchanged: no change
	)
}

// TestDeriveReplaceIsSilent compacts the table (a replace snapshot) after
// deletes: no events, and later snapshots still replay correctly.
func TestDeriveReplaceIsSilent(t *testing.T) {
	ctx := context.Background()
	cat := newTestCatalog(t)
	tbl := createTable(t, cat, "replace", testSchema(), catalog.WithProperties(iceberg.Properties{
		"format-version": "2", "write.delete.mode": "merge-on-read",
	}))
	tbl = appendJSON(t, tbl, jsonRows(0, 30), 10)
	tbl = deleteWhere(t, tbl, idIn(1, 11, 21))

	// Compact every live row into one new file.
	live, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Release()
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	rw := tx.NewRewrite(nil)
	for _, task := range tasks {
		rw.DeleteFile(task.File)
	}
	recs := tableBatches(t, live)
	for f, err := range table.WriteRecords(ctx, tbl, live.Schema(), batchesOf(recs...)) {
		if err != nil {
			t.Fatal(err)
		}
		rw.AddDataFile(f)
	}
	releaseAll(recs)
	if err := rw.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if tbl, err = tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	tbl = deleteWhere(t, tbl, idIn(2, 3))
	got := replayHistory(t, tbl, Options{})
	wantCounts(t, got,
		map[changelog.Op]int{changelog.OpInsert: 30},
		map[changelog.Op]int{changelog.OpDelete: 3},
		map[changelog.Op]int{},
		map[changelog.Op]int{changelog.OpDelete: 2},
	)
	hist, _ := changelog.MainHistory(tbl.Metadata())
	if hist[2].Operation != "replace" {
		t.Errorf("compaction snapshot has operation %q, want replace", hist[2].Operation)
	}
}
