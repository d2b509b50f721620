package changelog

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// evolveFrom is a schema rows were written with; evolveTo the table's
// schema after every kind of evolution Iceberg allows: columns reordered,
// renamed (the key too, and fields nested in a struct and in a list's
// structs), added (with and without an initial default, top-level and
// nested), dropped, and promoted (int to long, float to double, a
// decimal's precision).
func evolveFrom() *iceberg.Schema {
	return iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "qty", Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: 4, Name: "price", Type: iceberg.PrimitiveTypes.Float32},
		iceberg.NestedField{ID: 5, Name: "amt", Type: iceberg.DecimalTypeOf(9, 2)},
		iceberg.NestedField{ID: 6, Name: "addr", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 7, Name: "city", Type: iceberg.PrimitiveTypes.String},
			{ID: 8, Name: "zip", Type: iceberg.PrimitiveTypes.Int32},
		}}},
		iceberg.NestedField{ID: 9, Name: "tags", Type: &iceberg.ListType{ElementID: 10, Element: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 11, Name: "k", Type: iceberg.PrimitiveTypes.String},
			{ID: 12, Name: "v", Type: iceberg.PrimitiveTypes.Int32},
		}}}},
		iceberg.NestedField{ID: 13, Name: "attrs", Type: &iceberg.MapType{KeyID: 14, KeyType: iceberg.PrimitiveTypes.String,
			ValueID: 15, ValueType: iceberg.PrimitiveTypes.Int32}},
		iceberg.NestedField{ID: 16, Name: "gone", Type: iceberg.PrimitiveTypes.String},
	)
}

func evolveTo() *iceberg.Schema {
	return iceberg.NewSchemaWithIdentifiers(3, []int{1},
		iceberg.NestedField{ID: 5, Name: "amt", Type: iceberg.DecimalTypeOf(18, 2)},
		iceberg.NestedField{ID: 1, Name: "key_id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "label", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "qty", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 4, Name: "price", Type: iceberg.PrimitiveTypes.Float64},
		iceberg.NestedField{ID: 6, Name: "addr", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 8, Name: "zip", Type: iceberg.PrimitiveTypes.Int64},
			{ID: 7, Name: "town", Type: iceberg.PrimitiveTypes.String},
			{ID: 17, Name: "country", Type: iceberg.PrimitiveTypes.String},
		}}},
		iceberg.NestedField{ID: 9, Name: "tags", Type: &iceberg.ListType{ElementID: 10, Element: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 11, Name: "key", Type: iceberg.PrimitiveTypes.String},
			{ID: 12, Name: "v", Type: iceberg.PrimitiveTypes.Int64},
		}}}},
		iceberg.NestedField{ID: 13, Name: "attrs", Type: &iceberg.MapType{KeyID: 14, KeyType: iceberg.PrimitiveTypes.String,
			ValueID: 15, ValueType: iceberg.PrimitiveTypes.Int64}},
		iceberg.NestedField{ID: 18, Name: "note", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 19, Name: "level", Type: iceberg.PrimitiveTypes.Int32, InitialDefault: float64(7)},
	)
}

// evolveChanges is an insert of row 0 and an update 0 -> 1 written in
// evolveFrom.
func evolveChanges(t *testing.T, target *iceberg.Schema) *Changes {
	t.Helper()
	sc, err := table.SchemaToArrowSchema(evolveFrom(), nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, sc, strings.NewReader(`[
		{"id":1,"name":"a","qty":3,"price":1.1,"amt":"12.30","addr":{"city":"Oslo","zip":150},
		 "tags":[{"k":"x","v":1},{"k":"y","v":null}],"attrs":[{"key":"p","value":2}],"gone":"g"},
		{"id":1,"name":null,"qty":null,"price":null,"amt":null,"addr":null,"tags":null,"attrs":null,"gone":null}]`))
	if err != nil {
		t.Fatal(err)
	}
	c := &Changes{Table: "db.t", SnapshotID: 9, SequenceNumber: 2, TimestampMs: 1, Schema: evolveFrom(), KeyFieldIDs: []int{1},
		Batches: []arrow.RecordBatch{rec}, Partitions: 1,
		Records: []Record{{Op: OpInsert, Before: NoRow, After: RowRef{0, 0}}, {Op: OpUpdate, Before: RowRef{0, 0}, After: RowRef{0, 1}}}}
	if target != nil {
		c.Target, c.TargetKeyFieldIDs = target, target.IdentifierFieldIDs
	}
	if err := c.Prepare(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Release)
	return c
}

// Rows written in an older schema are written in the target schema as an
// Iceberg reader of the table shows them: by field id, in the target's
// order and names, added columns null or their initial default, dropped
// ones gone, promoted ones in the new type; the key too; and the source
// block names the schema.
func TestRecordsInTheTargetSchema(t *testing.T) {
	c := evolveChanges(t, evolveTo())
	rowA := `{"amt":12.30,"key_id":1,"label":"a","qty":3,"price":1.100000023841858,"addr":{"zip":150,"town":"Oslo","country":null},` +
		`"tags":[{"key":"x","v":1},{"key":"y","v":null}],"attrs":{"p":2},"note":null,"level":7}`
	rowB := `{"amt":null,"key_id":1,"label":null,"qty":null,"price":null,"addr":null,"tags":null,"attrs":null,"note":null,"level":7}`
	f, _ := FormatByName("debezium-json")
	got, _ := f.AppendValue(nil, c, &c.Records[1])
	want := `{"before":` + rowA + `,"after":` + rowB + `,"op":"u","ts_ms":1,"source":{"connector":"lakegw","table":"db.t","snapshot_id":9,"sequence_number":2,"schema_id":3,"ts_ms":1}}`
	if string(got) != want {
		t.Errorf("debezium value\n got %s\nwant %s", got, want)
	}
	key, ok := f.AppendKey(nil, c, &c.Records[1])
	if !ok || string(key) != `{"key_id":1}` {
		t.Errorf("key %s %v, want {\"key_id\":1}", key, ok)
	}
	// The same rows as written keep their own names and types.
	asWritten := evolveChanges(t, nil)
	got, _ = f.AppendValue(nil, asWritten, &asWritten.Records[0])
	if !strings.Contains(string(got), `"after":{"id":1,"name":"a","qty":3,"price":1.1,"amt":12.30,"addr":{"city":"Oslo","zip":150},`) ||
		!strings.Contains(string(got), `"schema_id":0`) {
		t.Errorf("as written: %s", got)
	}
}

// Written in its own schema through the projection, a row has exactly the
// bytes RowAppender gives it: the projection adds nothing of its own (and
// Prepare skips it for a snapshot written in the target schema).
func TestProjectionOntoTheSameSchemaIsIdentity(t *testing.T) {
	c := evolveChanges(t, nil)
	row, err := RowAppender(c.Batches[0])
	if err != nil {
		t.Fatal(err)
	}
	projected, err := projectedRowAppender(c.Batches[0], evolveFrom(), evolveFrom())
	if err != nil {
		t.Fatal(err)
	}
	for r := range 2 {
		want := row(nil, r)
		if got := projected(nil, r); string(got) != string(want) {
			t.Errorf("row %d\n got %s\nwant %s", r, got, want)
		}
	}
}

// A record's partition is fixed by its snapshot as written: writing the
// records in another schema (the key renamed) moves none of them, and the
// partition key is named by KeyHashNames.
func TestPartitionsDoNotFollowTheTarget(t *testing.T) {
	build := func(target *iceberg.Schema, names []string) []int32 {
		c := evolveChanges(t, target)
		c.Partitions = 7
		c.KeyHashNames = names
		for i := range 40 {
			c.Records = append(c.Records, Record{Op: OpInsert, Before: NoRow, After: RowRef{0, int32(i % 2)}})
		}
		if err := c.AssignPartitions(); err != nil {
			t.Fatal(err)
		}
		var ps []int32
		for _, r := range c.Records {
			ps = append(ps, r.Partition)
		}
		return ps
	}
	if partitionOf([]byte(`{"id":1}`), 7) == partitionOf([]byte(`{"key_id":1}`), 7) {
		t.Fatal("the key's two names hash to one partition: the test could not tell them apart")
	}
	asWritten := build(nil, nil)
	if projected := build(evolveTo(), nil); !equalInt32s(projected, asWritten) {
		t.Errorf("partitions moved with the target schema: %v, as written %v", projected, asWritten)
	}
	if got, want := build(nil, []string{"id"}), asWritten; !equalInt32s(got, want) {
		t.Errorf("the partition key named by its own name: %v, want %v", got, want)
	}
	if renamed := build(nil, []string{"key_id"}); equalInt32s(renamed, asWritten) {
		t.Errorf("KeyHashNames ignored: the key named key_id hashed as id")
	}
	// StableKeyNames: the oldest schema's name, whichever is current.
	if got := StableKeyNames([]*iceberg.Schema{evolveTo(), evolveFrom()}, []int{1, 2, 99}); got[0] != "id" || got[1] != "name" || got[2] != "" {
		t.Errorf("StableKeyNames = %q, want the names of schema 0", got)
	}
}

func equalInt32s(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Format v3's promotions: a date is read as midnight of a timestamp, and
// an unknown (always null) column as any type.
func TestProjectionOfV3Promotions(t *testing.T) {
	from := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "d", Type: iceberg.PrimitiveTypes.Date},
		iceberg.NestedField{ID: 2, Name: "u", Type: iceberg.UnknownType{}},
	)
	to := iceberg.NewSchema(1,
		iceberg.NestedField{ID: 1, Name: "d", Type: iceberg.PrimitiveTypes.Timestamp},
		iceberg.NestedField{ID: 2, Name: "u", Type: iceberg.PrimitiveTypes.Int64},
	)
	sc := arrow.NewSchema([]arrow.Field{{Name: "d", Type: arrow.FixedWidthTypes.Date32, Nullable: true}, {Name: "u", Type: arrow.Null, Nullable: true}}, nil)
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, sc, strings.NewReader(`[{"d":"2024-03-21","u":null},{"d":null,"u":null}]`))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	row, err := projectedRowAppender(rec, from, to)
	if err != nil {
		t.Fatal(err)
	}
	for r, want := range []string{`{"d":"2024-03-21 00:00:00","u":null}`, `{"d":null,"u":null}`} {
		if got := string(row(nil, r)); got != want {
			t.Errorf("row %d: %s, want %s", r, got, want)
		}
	}
}

// Writing records in the target schema allocates nothing per record, in
// every format, as writing them as written does.
func TestProjectedEncodingAllocationFree(t *testing.T) {
	checkAllocationFree(t, evolveChanges(t, evolveTo()))
}

// A column whose type changed in a way Iceberg does not allow fails to
// prepare with its name, never a silently different value.
func TestProjectionRefusesAnIncompatibleType(t *testing.T) {
	to := iceberg.NewSchema(4,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.Int32},
	)
	sc, _ := table.SchemaToArrowSchema(evolveFrom(), nil, true, false)
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, sc, strings.NewReader(`[{"id":1,"name":"a"}]`))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	c := &Changes{Table: "db.t", Schema: evolveFrom(), Target: to, Batches: []arrow.RecordBatch{rec}}
	if err := c.Prepare(); err == nil || !strings.Contains(err.Error(), "column name") {
		t.Fatalf("Prepare = %v, want an error naming column name", err)
	}
}

// Initial defaults (format v3) are written as the column's own values are.
func TestInitialDefaultJSON(t *testing.T) {
	cases := []struct {
		typ  iceberg.Type
		def  any
		want string
	}{
		{iceberg.PrimitiveTypes.Bool, true, `true`},
		{iceberg.PrimitiveTypes.Int64, float64(-42), `-42`},
		{iceberg.PrimitiveTypes.Float64, 0.5, `0.5`},
		{iceberg.PrimitiveTypes.String, `a"b`, `"a\"b"`},
		{iceberg.DecimalTypeOf(9, 2), "-14.20", `-14.20`},
		{iceberg.PrimitiveTypes.Date, "2017-11-16", `"2017-11-16"`},
		{iceberg.PrimitiveTypes.Time, "22:31:08.123", `"22:31:08.123"`},
		{iceberg.PrimitiveTypes.Timestamp, "2017-11-16T22:31:08.000001", `"2017-11-16 22:31:08.000001"`},
		{iceberg.PrimitiveTypes.TimestampTz, "2017-11-16T22:31:08.000001+00:00", `"2017-11-16 22:31:08.000001Z"`},
		{iceberg.PrimitiveTypes.Binary, "0aff", `"Cv8="`},
		{iceberg.PrimitiveTypes.UUID, "f79c3e09-677c-4bbd-a479-3f349cb785e7", `"f79c3e09-677c-4bbd-a479-3f349cb785e7"`},
		{iceberg.PrimitiveTypes.Int32, nil, `null`},
	}
	for _, tc := range cases {
		got, err := initialDefaultJSON(iceberg.NestedField{ID: 1, Name: "c", Type: tc.typ, InitialDefault: tc.def})
		if err != nil || string(got) != tc.want {
			t.Errorf("%s default %v: %s %v, want %s", tc.typ, tc.def, got, err, tc.want)
		}
	}
	for _, bad := range []struct {
		typ iceberg.Type
		def any
	}{{iceberg.PrimitiveTypes.Int32, "x"}, {iceberg.DecimalTypeOf(9, 2), "1.5"}, {iceberg.PrimitiveTypes.Date, "16/11/2017"}, {iceberg.PrimitiveTypes.Int64, 1.5}} {
		if got, err := initialDefaultJSON(iceberg.NestedField{ID: 1, Name: "c", Type: bad.typ, InitialDefault: bad.def}); err == nil {
			t.Errorf("%s default %v written as %s, want an error", bad.typ, bad.def, got)
		}
	}
}
