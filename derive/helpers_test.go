package derive

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"path/filepath"
	"slices"
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

	"github.com/lakegw/lakegw/changelog"
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

// rowMultiset holds rows keyed by their JSON, with counts.
type rowMultiset map[string]int

// scanRows is the oracle: an iceberg-go scan of the snapshot, rows as JSON.
func scanRows(t *testing.T, tbl *table.Table, snapshotID int64) rowMultiset {
	t.Helper()
	at, err := tbl.Scan(table.WithSnapshotID(snapshotID)).ToArrowTable(context.Background())
	if err != nil {
		t.Fatalf("oracle scan of snapshot %d: %v", snapshotID, err)
	}
	return rowsOf(t, at)
}

// rowsOf releases at and returns its rows as JSON.
func rowsOf(t *testing.T, at arrow.Table) rowMultiset {
	t.Helper()
	defer at.Release()
	out := rowMultiset{}
	tr := array.NewTableReader(at, 1024)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		enc, err := changelog.RowAppender(rec)
		if err != nil {
			t.Fatal(err)
		}
		var buf []byte
		for r := range int(rec.NumRows()) {
			buf = enc(buf[:0], r)
			out[string(buf)]++
		}
	}
	if err := tr.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// evolveSchema commits the schema changes f makes to tbl.
func evolveSchema(t *testing.T, tbl *table.Table, f func(u *table.UpdateSchema)) *table.Table {
	t.Helper()
	tx := tbl.NewTransaction()
	u := table.NewUpdateSchema(tx, true, false)
	f(u)
	if err := u.Commit(); err != nil {
		t.Fatal(err)
	}
	out, err := tx.Commit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// applyChanges replays the events onto a multiset of rows, failing the test
// on a delete of a row that is not there.
func applyChanges(t *testing.T, state rowMultiset, c *changelog.Changes) {
	t.Helper()
	rows := make([]func(dst []byte, row int) []byte, len(c.Batches))
	for i, b := range c.Batches {
		fn, err := changelog.RowAppender(b)
		if err != nil {
			t.Fatal(err)
		}
		rows[i] = fn
	}
	row := func(ref changelog.RowRef) string {
		return string(rows[ref.Batch](nil, int(ref.Row)))
	}
	for i, rec := range c.Records {
		if rec.Before.Valid() {
			k := row(rec.Before)
			if state[k] == 0 {
				t.Fatalf("snapshot %d record %d (%s) removes a row that is not in the table: %s", c.SnapshotID, i, rec.Op.Header(), k)
			}
			state[k]--
			if state[k] == 0 {
				delete(state, k)
			}
		}
		if rec.After.Valid() {
			state[row(rec.After)]++
		}
	}
}

// compareMultisets reports the first differences between want and got.
func compareMultisets(t *testing.T, what string, want, got rowMultiset) {
	t.Helper()
	var missing, extra []string
	for k, n := range want {
		if got[k] < n {
			missing = append(missing, k)
		}
	}
	for k, n := range got {
		if want[k] < n {
			extra = append(extra, k)
		}
	}
	if len(missing) == 0 && len(extra) == 0 {
		return
	}
	slices.Sort(missing)
	slices.Sort(extra)
	t.Errorf("%s: %d rows missing, %d extra rows\nmissing (first 5): %v\nextra (first 5): %v",
		what, len(missing), len(extra), head(missing, 5), head(extra, 5))
}

func head(s []string, n int) []string {
	if len(s) > n {
		return s[:n]
	}
	return s
}

func countOps(c *changelog.Changes) map[changelog.Op]int {
	out := map[changelog.Op]int{}
	for _, r := range c.Records {
		out[r.Op]++
	}
	return out
}

func stringsReader(s string) *strings.Reader { return strings.NewReader(s) }

func arrowTableFromRecords(recs ...arrow.RecordBatch) arrow.Table {
	return array.NewTableFromRecords(recs[0].Schema(), recs)
}

func recordFromJSONSchema(t *testing.T, sc *arrow.Schema, rows string) arrow.RecordBatch {
	t.Helper()
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, sc, strings.NewReader(rows))
	if err != nil {
		t.Fatal(err)
	}
	return rec
}

func mustSelect(t *testing.T, sc *iceberg.Schema, ids []int) *iceberg.Schema {
	t.Helper()
	var names []string
	for _, id := range ids {
		n, ok := sc.FindColumnName(id)
		if !ok {
			t.Fatalf("no field %d", id)
		}
		names = append(names, n)
	}
	out, err := sc.Select(true, names...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// tableBatches returns the table's data as record batches the caller owns.
func tableBatches(t *testing.T, tb arrow.Table) []arrow.RecordBatch {
	t.Helper()
	tr := array.NewTableReader(tb, 1<<20)
	defer tr.Release()
	var out []arrow.RecordBatch
	for tr.Next() {
		r := tr.RecordBatch()
		r.Retain()
		out = append(out, r)
	}
	return out
}

// rekeyByID maps rows written under schema from onto schema to (top-level
// columns matched by field id, so renames keep their values; new columns
// are null, dropped ones go), as a consumer following the schema would.
func rekeyByID(t *testing.T, m rowMultiset, from, to *iceberg.Schema) rowMultiset {
	t.Helper()
	if from == nil || from.ID == to.ID {
		return m
	}
	out := rowMultiset{}
	for k, n := range m {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal([]byte(k), &obj); err != nil {
			t.Fatalf("row %s: %v", k, err)
		}
		var b strings.Builder
		b.WriteByte('{')
		for i, f := range to.Fields() {
			if i > 0 {
				b.WriteByte(',')
			}
			v := json.RawMessage("null")
			if old, ok := from.FindFieldByID(f.ID); ok {
				if ov, ok := obj[old.Name]; ok {
					v = ov
				}
			}
			b.Write(jsonString(t, f.Name))
			b.WriteByte(':')
			b.Write(v)
		}
		b.WriteByte('}')
		out[b.String()] += n
	}
	return out
}

// jsonString is s as a JSON string, as the formats write column names (no
// HTML escaping).
func jsonString(t *testing.T, s string) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}
