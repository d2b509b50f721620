package derive

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/changelog"
)

// TestRecordsInTheCurrentSchemaReplayToTheScan evolves a table in every
// way Iceberg allows between snapshots (renames, the key's and a nested
// field's too; added columns, top-level and nested; a dropped column; a
// column moved first; int to long, float to double and a decimal's
// precision promoted), with inserts, copy-on-write updates and position
// deletes of rows written before each change. Every snapshot's records,
// written in the table's current schema through a format, replay to what
// iceberg-go's own reader shows of that snapshot in the current schema (a
// branch ref scan, which projects old files onto the table's schema), and
// every before-image equals the after-image that created its row.
func TestRecordsInTheCurrentSchemaReplayToTheScan(t *testing.T) {
	for _, version := range []string{"2", "3"} {
		t.Run("v"+version, func(t *testing.T) { testCurrentSchema(t, version) })
	}
}

func testCurrentSchema(t *testing.T, version string) {
	ctx := context.Background()
	cat := newTestCatalog(t)
	sc := iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "qty", Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: 4, Name: "price", Type: iceberg.PrimitiveTypes.Float32},
		iceberg.NestedField{ID: 5, Name: "amt", Type: iceberg.DecimalTypeOf(9, 2)},
		iceberg.NestedField{ID: 6, Name: "addr", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 7, Name: "city", Type: iceberg.PrimitiveTypes.String},
			{ID: 8, Name: "zip", Type: iceberg.PrimitiveTypes.Int32},
		}}},
		iceberg.NestedField{ID: 9, Name: "gone", Type: iceberg.PrimitiveTypes.String},
	)
	tbl := createTable(t, cat, "current_v"+version, sc, catalog.WithProperties(iceberg.Properties{
		"format-version": version, "write.delete.mode": "merge-on-read",
	}))
	evolve := func(f func(u *table.UpdateSchema)) { tbl = evolveSchema(t, tbl, f) }
	keyIn := func(col string, ids ...int64) iceberg.BooleanExpression {
		var e iceberg.BooleanExpression = iceberg.AlwaysFalse{}
		for _, id := range ids {
			e = iceberg.NewOr(e, iceberg.EqualTo(iceberg.Reference(col), id))
		}
		return e
	}
	tbl = appendJSON(t, tbl, `[
		{"id":1,"name":"a","qty":1,"price":1.1,"amt":"1.10","addr":{"city":"Oslo","zip":150},"gone":"g1"},
		{"id":2,"name":"b","qty":2,"price":2.2,"amt":"2.20","addr":{"city":"Rome","zip":100},"gone":"g2"},
		{"id":3,"name":"c","qty":3,"price":3.3,"amt":"3.30","addr":null,"gone":null},
		{"id":4,"name":"d","qty":4,"price":null,"amt":null,"addr":{"city":null,"zip":4},"gone":"g4"}]`, 0)
	evolve(func(u *table.UpdateSchema) {
		u.RenameColumn([]string{"name"}, "label")
		u.RenameColumn([]string{"addr", "city"}, "town")
		u.AddColumn([]string{"note"}, iceberg.PrimitiveTypes.String, "", false, nil)
		u.UpdateColumn([]string{"qty"}, table.ColumnUpdate{FieldType: iceberg.Optional[iceberg.Type]{Valid: true, Val: iceberg.PrimitiveTypes.Int64}})
	})
	// A position delete of a row written before the change.
	tbl = deleteWhere(t, tbl, keyIn("id", 2))
	tbl = appendJSON(t, tbl, `[{"id":5,"label":"e","qty":5000000000,"price":5.5,"amt":"5.50","addr":{"town":"Pisa","zip":56},"gone":"g5","note":"n5"}]`, 0)
	evolve(func(u *table.UpdateSchema) {
		u.RenameColumn([]string{"id"}, "key_id")
		u.AddColumn([]string{"addr", "country"}, iceberg.PrimitiveTypes.String, "", false, nil)
		u.UpdateColumn([]string{"price"}, table.ColumnUpdate{FieldType: iceberg.Optional[iceberg.Type]{Valid: true, Val: iceberg.PrimitiveTypes.Float64}})
		u.UpdateColumn([]string{"amt"}, table.ColumnUpdate{FieldType: iceberg.Optional[iceberg.Type]{Valid: true, Val: iceberg.DecimalTypeOf(18, 2)}})
		u.MoveFirst([]string{"amt"})
		u.DeleteColumn([]string{"gone"})
	})
	// A copy-on-write update of a row written two schemas ago, and
	// position deletes of rows of both older schemas.
	rec := recordFromJSON(t, tbl, `[{"amt":"3.31","key_id":3,"label":"c2","qty":33,"price":3.25,"addr":{"town":"Bari","zip":70,"country":"IT"},"note":"upd"}]`)
	data := arrowTableFromRecords(rec)
	var err error
	tbl, err = tbl.OverwriteTable(ctx, data, 1, nil, table.WithOverwriteFilter(keyIn("key_id", 3)))
	data.Release()
	rec.Release()
	if err != nil {
		t.Fatal(err)
	}
	tbl = deleteWhere(t, tbl, keyIn("key_id", 4, 5))

	hist, err := changelog.MainHistory(tbl.Metadata())
	if err != nil {
		t.Fatal(err)
	}
	current := tbl.Metadata().CurrentSchema()
	f, _ := changelog.FormatByName("debezium-json")
	state := rowMultiset{}
	old, oldBefore := 0, 0
	for i, snap := range hist {
		c, err := Derive(ctx, tbl, snap, Options{Target: current})
		if err != nil {
			t.Fatalf("snapshot %d: %v", i, err)
		}
		for j := range c.Records {
			if c.Schema.ID != current.ID {
				old++
				if c.Records[j].Before.Valid() {
					oldBefore++
				}
			}
			v, _ := f.AppendValue(nil, c, &c.Records[j])
			var ev struct {
				Before, After json.RawMessage
				Source        struct {
					SchemaID int `json:"schema_id"`
				}
			}
			if err := json.Unmarshal(v, &ev); err != nil {
				t.Fatalf("snapshot %d record %d: %v: %s", i, j, err, v)
			}
			if ev.Source.SchemaID != current.ID {
				t.Errorf("snapshot %d record %d: source schema_id %d, want the current %d", i, j, ev.Source.SchemaID, current.ID)
			}
			if before := string(ev.Before); before != "null" {
				if state[before] == 0 {
					t.Fatalf("snapshot %d record %d removes a row no record created (as written now): %s\nstate %v", i, j, before, state)
				}
				if state[before]--; state[before] == 0 {
					delete(state, before)
				}
			}
			if after := string(ev.After); after != "null" {
				state[after]++
			}
		}
		c.Release()
		compareMultisets(t, "snapshot "+snap.Operation, scanInSchemaOfTable(t, tbl, snap.SnapshotID), state)
	}
	if old < 5 || oldBefore < 1 {
		t.Errorf("%d records of snapshots written in an older schema, %d of them with a before-image: the test evolves too little", old, oldBefore)
	}
}

// scanInSchemaOfTable is the oracle: iceberg-go's reader of snapshot id in
// the table's current schema. A scan of a branch ref reads the branch's
// snapshot with the table schema (a snapshot id or a tag would read it
// with its own), so the snapshot gets a branch of its own.
func scanInSchemaOfTable(t *testing.T, tbl *table.Table, id int64) rowMultiset {
	t.Helper()
	b, err := table.MetadataBuilderFromBase(tbl.Metadata(), tbl.MetadataLocation())
	if err != nil {
		t.Fatal(err)
	}
	if err := b.SetSnapshotRef("lakegw-oracle", id, table.BranchRef); err != nil {
		t.Fatal(err)
	}
	meta, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	view := table.New(tbl.Identifier(), meta, tbl.MetadataLocation(), tbl.FS, nil)
	scan, err := view.Scan().UseRef("lakegw-oracle")
	if err != nil {
		t.Fatal(err)
	}
	at, err := scan.ToArrowTable(context.Background())
	if err != nil {
		t.Fatalf("oracle scan of snapshot %d: %v", id, err)
	}
	return rowsOf(t, at)
}
