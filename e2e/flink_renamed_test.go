package e2e

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/lake"
)

// renamedTable is the table FlinkSchemaTest reads with a Flink table
// declared in its current schema: its columns were renamed, promoted and
// added mid-history, with deletes and an update of rows written before.
const renamedTable = "flink.renamed"

// writeRenamedTable writes renamedTable's history: 20 rows, 3 deleted by
// position; then name renamed to label, qty promoted to long and price to
// double, note added; 10 more rows, 2 old rows deleted and one updated.
func writeRenamedTable(t *testing.T, cat catalog.Catalog) {
	t.Helper()
	ctx := context.Background()
	sc := iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "qty", Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: 4, Name: "price", Type: iceberg.PrimitiveTypes.Float32},
	)
	if _, err := cat.CreateTable(ctx, identOf(renamedTable), sc, catalog.WithProperties(iceberg.Properties{
		"format-version": "2", "write.delete.mode": "merge-on-read",
	})); err != nil {
		t.Fatalf("create %s: %v", renamedTable, err)
	}
	ident := identOf(renamedTable)
	var rows []string
	for i := range 20 {
		rows = append(rows, `{"id":`+strconv.Itoa(i)+`,"name":"n`+strconv.Itoa(i)+`","qty":`+strconv.Itoa(i*3)+`,"price":`+strconv.Itoa(i)+`.1}`)
	}
	appendCurrentJSON(t, cat, ident, "["+strings.Join(rows, ",")+"]")
	deleteKeys := func(col string, ids ...int64) {
		t.Helper()
		var e iceberg.BooleanExpression = iceberg.AlwaysFalse{}
		for _, id := range ids {
			e = iceberg.NewOr(e, iceberg.EqualTo(iceberg.Reference(col), id))
		}
		cur, err := cat.LoadTable(ctx, ident)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := cur.Delete(ctx, e, nil); err != nil {
			t.Fatalf("delete from %s: %v", renamedTable, err)
		}
	}
	deleteKeys("id", 1, 5, 9)

	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	u := table.NewUpdateSchema(tx, true, false)
	u.RenameColumn([]string{"name"}, "label")
	u.UpdateColumn([]string{"qty"}, table.ColumnUpdate{FieldType: iceberg.Optional[iceberg.Type]{Valid: true, Val: iceberg.PrimitiveTypes.Int64}})
	u.UpdateColumn([]string{"price"}, table.ColumnUpdate{FieldType: iceberg.Optional[iceberg.Type]{Valid: true, Val: iceberg.PrimitiveTypes.Float64}})
	u.AddColumn([]string{"note"}, iceberg.PrimitiveTypes.String, "", false, nil)
	if err := u.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatalf("evolve %s: %v", renamedTable, err)
	}

	rows = rows[:0]
	for i := 20; i < 30; i++ {
		rows = append(rows, `{"id":`+strconv.Itoa(i)+`,"label":"L`+strconv.Itoa(i)+`","qty":`+strconv.Itoa(i)+`000000000,"price":`+strconv.Itoa(i)+`.25,"note":"new"}`)
	}
	appendCurrentJSON(t, cat, ident, "["+strings.Join(rows, ",")+"]")
	deleteKeys("id", 2, 21)
	// An update of a row written in the first schema: delete it, add its
	// new version, one snapshot.
	if tbl, err = cat.LoadTable(ctx, ident); err != nil {
		t.Fatal(err)
	}
	sc2, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, sc2, strings.NewReader(`[{"id":3,"label":"n3 again","qty":7,"price":3.5,"note":"upd"}]`))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	at := array.NewTableFromRecords(sc2, []arrow.RecordBatch{rec})
	defer at.Release()
	if _, err := tbl.OverwriteTable(ctx, at, 1, nil, table.WithOverwriteFilter(iceberg.EqualTo(iceberg.Reference("id"), int64(3)))); err != nil {
		t.Fatalf("update %s: %v", renamedTable, err)
	}
}

// scanCurrentSchema is the oracle of FlinkSchemaTest: the live rows of a
// table as iceberg-go's scanner reads them in the table's current schema,
// each a map of column name to value.
func scanCurrentSchema(ctx context.Context, cat catalog.Catalog, name string) ([]map[string]any, error) {
	ident, err := lake.TopicIdent(name) // a table's name, or a topic lakegw created
	if err != nil {
		return nil, err
	}
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		return nil, err
	}
	at, err := tbl.Scan().ToArrowTable(ctx)
	if err != nil {
		return nil, err
	}
	defer at.Release()
	var out []map[string]any
	tr := array.NewTableReader(at, 1024)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		for r := range int(rec.NumRows()) {
			row := map[string]any{}
			for c, f := range rec.Schema().Fields() {
				col := rec.Column(c)
				if col.IsNull(r) {
					row[f.Name] = nil
					continue
				}
				row[f.Name] = col.GetOneForMarshal(r)
			}
			out = append(out, row)
		}
	}
	return out, tr.Err()
}
