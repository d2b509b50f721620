package derive

import (
	"context"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/changelog"
)

// TestDeriveSchemaAndPartitionEvolution changes the schema (add, rename,
// promote, drop) and the partition spec between snapshots: every snapshot's
// events use the column names of its own schema and replay to the scan.
func TestDeriveSchemaAndPartitionEvolution(t *testing.T) {
	ctx := context.Background()
	cat := newTestCatalog(t)
	sc := iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "qty", Type: iceberg.PrimitiveTypes.Int32},
	)
	tbl := createTable(t, cat, "evolve", sc)
	tbl = appendJSON(t, tbl, `[{"id":1,"name":"a","qty":1},{"id":2,"name":"b","qty":2},{"id":3,"name":"c","qty":3}]`, 0)

	evolve := func(f func(u *table.UpdateSchema)) { tbl = evolveSchema(t, tbl, f) }
	evolve(func(u *table.UpdateSchema) {
		u.AddColumn([]string{"note"}, iceberg.PrimitiveTypes.String, "", false, nil)
		u.RenameColumn([]string{"name"}, "label")
		u.UpdateColumn([]string{"qty"}, table.ColumnUpdate{FieldType: iceberg.Optional[iceberg.Type]{Valid: true, Val: iceberg.PrimitiveTypes.Int64}})
	})
	tbl = appendJSON(t, tbl, `[{"id":10,"label":"x","qty":5000000000,"note":"n"}]`, 0)
	// Copy-on-write update of an old row under the new schema.
	rec := recordFromJSON(t, tbl, `[{"id":2,"label":"b2","qty":20,"note":"upd"}]`)
	data := arrowTableFromRecords(rec)
	var err error
	tbl, err = tbl.OverwriteTable(ctx, data, 1, nil, table.WithOverwriteFilter(idIn(2)))
	data.Release()
	rec.Release()
	if err != nil {
		t.Fatal(err)
	}
	// Partition evolution: new files are bucketed by id.
	tx := tbl.NewTransaction()
	if err := table.NewUpdateSpec(tx, true).AddField("id", iceberg.BucketTransform{NumBuckets: 4}, "id_bucket").Commit(); err != nil {
		t.Fatal(err)
	}
	if tbl, err = tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	tbl = appendJSON(t, tbl, `[{"id":20,"label":"p","qty":1,"note":null},{"id":21,"label":"q","qty":2,"note":null},
		{"id":22,"label":"r","qty":3,"note":null},{"id":23,"label":"s","qty":4,"note":null}]`, 0)
	tbl = deleteWhere(t, tbl, idIn(21, 3))
	evolve(func(u *table.UpdateSchema) { u.DeleteColumn([]string{"note"}) })
	tbl = deleteWhere(t, tbl, idIn(10))

	got := replayHistory(t, tbl, Options{})
	wantCounts(t, got,
		map[changelog.Op]int{changelog.OpInsert: 3},
		map[changelog.Op]int{changelog.OpInsert: 1},
		map[changelog.Op]int{changelog.OpUpdate: 1},
		map[changelog.Op]int{changelog.OpInsert: 4},
		map[changelog.Op]int{changelog.OpDelete: 2},
		map[changelog.Op]int{changelog.OpDelete: 1},
	)
	// The update carries the renamed column and the added one.
	hist, _ := changelog.MainHistory(tbl.Metadata())
	c, err := Derive(ctx, tbl, hist[2], Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	f, _ := changelog.FormatByName("debezium-json")
	v, _ := f.AppendValue(nil, c, &c.Records[0])
	const want = `{"before":{"id":2,"label":"b","qty":2,"note":null},"after":{"id":2,"label":"b2","qty":20,"note":"upd"},"op":"u"`
	if string(v[:len(want)]) != want {
		t.Errorf("update event\n got %s\nwant %s...", v, want)
	}
	last, err := Derive(ctx, tbl, hist[5], Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer last.Release()
	v, _ = f.AppendValue(nil, last, &last.Records[0])
	const wantLast = `{"before":{"id":10,"label":"x","qty":5000000000},"after":null,"op":"d"`
	if string(v[:len(wantLast)]) != wantLast {
		t.Errorf("delete after dropping a column\n got %s\nwant %s...", v, wantLast)
	}
}
