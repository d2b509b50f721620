package derive

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/changelog"
)

// posDelete is one (file_path, pos) row of a position delete file.
type posDelete struct {
	path string
	pos  int64
}

// writePositionDeletes writes a position delete file by hand (as engines
// do) into the table's data directory and returns its DataFile.
func writePositionDeletes(t *testing.T, tbl *table.Table, name string, rows []posDelete) iceberg.DataFile {
	t.Helper()
	// Several data files in one file, unlike lakegw's file-scoped ones.
	b := array.NewRecordBuilder(memory.DefaultAllocator, table.PositionalDeleteArrowSchema)
	defer b.Release()
	for _, r := range rows {
		b.Field(0).(*array.StringBuilder).Append(r.path)
		b.Field(1).(*array.Int64Builder).Append(r.pos)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	loc := tbl.Location() + "/data/" + name
	f, err := os.Create(localPath(loc))
	if err != nil {
		t.Fatal(err)
	}
	w, err := pqarrow.NewFileWriter(table.PositionalDeleteArrowSchema, f, parquet.NewWriterProperties(), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(localPath(loc))
	if err != nil {
		t.Fatal(err)
	}
	bld, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentPosDeletes, loc, iceberg.ParquetFile,
		nil, nil, nil, int64(len(rows)), st.Size())
	if err != nil {
		t.Fatal(err)
	}
	return bld.Build()
}

// TestDerivePositionDeletesSameSnapshot commits data files and hand-written
// position delete files together: rows added and deleted in one snapshot
// yield nothing, a position named twice or already deleted yields one
// delete.
func TestDerivePositionDeletesSameSnapshot(t *testing.T) {
	ctx := context.Background()
	cat := newTestCatalog(t)
	tbl := createTable(t, cat, "rowdelta", testSchema(), catalog.WithProperties(iceberg.Properties{"format-version": "2"}))
	tbl = appendJSON(t, tbl, jsonRows(0, 10), 0)
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fileA := tasks[0].File.FilePath()

	tx := tbl.NewTransaction()
	rd := tx.NewRowDelta(nil)
	rec := recordFromJSON(t, tbl, jsonRows(10, 15))
	var fileB string
	for f, err := range table.WriteRecords(ctx, tbl, rec.Schema(), batchesOf(rec)) {
		if err != nil {
			t.Fatal(err)
		}
		fileB = f.FilePath()
		rd.AddRows(f)
	}
	rec.Release()
	rd.AddDeletes(writePositionDeletes(t, tbl, "pd1.parquet", []posDelete{
		{fileA, 2}, {fileA, 2}, {fileA, 5}, {fileB, 1}, {fileB, 3},
	}))
	if err := rd.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if tbl, err = tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	tx = tbl.NewTransaction()
	rd = tx.NewRowDelta(nil)
	rd.AddDeletes(writePositionDeletes(t, tbl, "pd2.parquet", []posDelete{{fileA, 5}, {fileA, 7}, {fileB, 1}}))
	if err := rd.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if tbl, err = tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	got := replayHistory(t, tbl, Options{})
	wantCounts(t, got,
		map[changelog.Op]int{changelog.OpInsert: 10},
		map[changelog.Op]int{changelog.OpDelete: 2, changelog.OpInsert: 3},
		map[changelog.Op]int{changelog.OpDelete: 1},
	)
	// The deleted rows are the right ones: ids 2, 5, then 7.
	hist, _ := changelog.MainHistory(tbl.Metadata())
	f, _ := changelog.FormatByName("debezium-json")
	var keys []string
	for _, snap := range hist[1:] {
		c, err := Derive(ctx, tbl, snap, Options{})
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range c.Records {
			if r.Op == changelog.OpDelete {
				k, _ := f.AppendKey(nil, c, &c.Records[i])
				keys = append(keys, string(k))
			}
		}
		c.Release()
	}
	if fmt.Sprint(keys) != `[{"id":2} {"id":5} {"id":7}]` {
		t.Errorf("deleted keys %v", keys)
	}
}

// TestDeriveEqualityAndPositionDeletesMixed applies equality and position
// deletes to the same data file: a row deleted by one kind is never deleted
// again by the other.
func TestDeriveEqualityAndPositionDeletesMixed(t *testing.T) {
	ctx := context.Background()
	cat := newTestCatalog(t)
	tbl := createTable(t, cat, "mixed", testSchema(), catalog.WithProperties(iceberg.Properties{"format-version": "2"}))
	tbl = appendJSON(t, tbl, jsonRows(0, 10), 0) // one file: position i holds id i
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	file := tasks[0].File.FilePath()
	commit := func(f func(tx *table.Transaction, rd *table.RowDelta)) {
		tx := tbl.NewTransaction()
		rd := tx.NewRowDelta(nil)
		f(tx, rd)
		if err := rd.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if tbl, err = tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	eqDelete := func(ids string) func(tx *table.Transaction, rd *table.RowDelta) {
		return func(tx *table.Transaction, rd *table.RowDelta) {
			sc, err := table.SchemaToArrowSchema(mustSelect(t, tbl.Schema(), []int{1}), nil, false, false)
			if err != nil {
				t.Fatal(err)
			}
			rec := recordFromJSONSchema(t, sc, ids)
			defer rec.Release()
			files, err := tx.WriteEqualityDeletes(ctx, []int{1}, batchesOf(rec))
			if err != nil {
				t.Fatal(err)
			}
			rd.AddDeletes(files...)
		}
	}
	commit(eqDelete(`[{"id":3}]`))
	// Position 3 is already gone by equality: only 5 is deleted.
	commit(func(_ *table.Transaction, rd *table.RowDelta) {
		rd.AddDeletes(writePositionDeletes(t, tbl, "pd-mixed.parquet", []posDelete{{file, 3}, {file, 5}}))
	})
	// 5 is already gone by position: only 6 is deleted.
	commit(eqDelete(`[{"id":5},{"id":6}]`))
	got := replayHistory(t, tbl, Options{})
	wantCounts(t, got,
		map[changelog.Op]int{changelog.OpInsert: 10},
		map[changelog.Op]int{changelog.OpDelete: 1},
		map[changelog.Op]int{changelog.OpDelete: 1},
		map[changelog.Op]int{changelog.OpDelete: 1},
	)
}
