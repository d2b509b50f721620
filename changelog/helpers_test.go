package changelog

// Test fixtures for the few tests of this package that need a table (the
// main-branch history) or a batch of testSchema (the formats). derive/'s
// tests have the same ones, with the helpers that derivation tests need.

import (
	"context"
	"database/sql"
	"fmt"
	"iter"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"
	_ "modernc.org/sqlite"
)

// newTestCatalog opens a SQL catalog (modernc sqlite, no cgo) with its
// warehouse in a temporary directory.
func newTestCatalog(t testing.TB) *sqlcat.Catalog {
	t.Helper()
	dir := t.TempDir()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "catalog.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	cat, err := sqlcat.NewCatalog("test", db, sqlcat.SQLite, iceberg.Properties{"warehouse": "file://" + filepath.Join(dir, "warehouse")})
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.CreateNamespace(context.Background(), table.Identifier{"ns"}, nil); err != nil {
		t.Fatal(err)
	}
	return cat
}

func createTable(t testing.TB, cat *sqlcat.Catalog, name string, sc *iceberg.Schema, opts ...catalog.CreateTableOpt) *table.Table {
	t.Helper()
	tbl, err := cat.CreateTable(context.Background(), table.Identifier{"ns", name}, sc, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

func testSchema() *iceberg.Schema {
	return iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "amount", Type: iceberg.DecimalTypeOf(10, 2)},
	)
}

func jsonRows(from, to int) string {
	var b strings.Builder
	b.WriteByte('[')
	for i := from; i < to; i++ {
		if i > from {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"name":"n%d","amount":"%d.%02d"}`, i, i%7, i, i%100)
	}
	b.WriteByte(']')
	return b.String()
}

// recordFromJSON builds an arrow batch of the table's current schema from
// JSON rows.
func recordFromJSON(t testing.TB, tbl *table.Table, rows string) arrow.RecordBatch {
	t.Helper()
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, sc, strings.NewReader(rows))
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

// appendJSON appends JSON rows to the table as one snapshot, in data files
// of rowsPerFile rows (one file when <= 0).
func appendJSON(t testing.TB, tbl *table.Table, rows string, rowsPerFile int64) *table.Table {
	t.Helper()
	ctx := context.Background()
	rec := recordFromJSON(t, tbl, rows)
	defer rec.Release()
	if rowsPerFile <= 0 {
		rowsPerFile = rec.NumRows()
	}
	var files []iceberg.DataFile
	for start := int64(0); start < rec.NumRows(); start += rowsPerFile {
		part := rec.NewSlice(start, min(start+rowsPerFile, rec.NumRows()))
		for f, err := range table.WriteRecords(ctx, tbl, part.Schema(), batchesOf(part)) {
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, f)
		}
		part.Release()
	}
	// A row delta with rows only is an append, and assigns v3 row ids.
	tx := tbl.NewTransaction()
	if err := tx.NewRowDelta(nil).AddRows(files...).Commit(ctx); err != nil {
		t.Fatal(err)
	}
	out, err := tx.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return out
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

func stringsReader(s string) *strings.Reader { return strings.NewReader(s) }
