package changelog

import (
	"encoding/json"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// testChanges builds a prepared Changes over one batch of two rows of
// testSchema: an insert of row 0, an update 0 -> 1, a delete of row 1 and a
// read of row 0.
func testChanges(t testing.TB, keys []int) *Changes {
	sc, err := table.SchemaToArrowSchema(testSchema(), nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, sc, stringsReader(`[
		{"id":1,"name":"a\"b","amount":"12.30"},
		{"id":1,"name":null,"amount":"-0.01"}]`))
	if err != nil {
		t.Fatal(err)
	}
	c := &Changes{
		Table: "db.sales", SnapshotID: 42, SequenceNumber: 3, TimestampMs: 1700000000123,
		Schema: testSchema(), KeyFieldIDs: keys, Batches: []arrow.RecordBatch{rec}, Partitions: 1,
		Records: []Record{
			{Op: OpInsert, Before: NoRow, After: RowRef{0, 0}},
			{Op: OpUpdate, Before: RowRef{0, 0}, After: RowRef{0, 1}},
			{Op: OpDelete, Before: RowRef{0, 1}, After: NoRow},
			{Op: OpRead, Before: NoRow, After: RowRef{0, 0}},
		},
	}
	if err := c.Prepare(); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestFormatsGolden(t *testing.T) {
	c := testChanges(t, []int{1})
	defer c.Release()
	const src = `"source":{"connector":"lakegw","table":"db.sales","snapshot_id":42,"sequence_number":3,"schema_id":0,"ts_ms":1700000000123}`
	rowA := `{"id":1,"name":"a\"b","amount":12.30}`
	rowB := `{"id":1,"name":null,"amount":-0.01}`
	want := map[string][]string{
		"debezium-json": {
			`{"before":null,"after":` + rowA + `,"op":"c","ts_ms":1700000000123,` + src + `}`,
			`{"before":` + rowA + `,"after":` + rowB + `,"op":"u","ts_ms":1700000000123,` + src + `}`,
			`{"before":` + rowB + `,"after":null,"op":"d","ts_ms":1700000000123,` + src + `}`,
			`{"before":null,"after":` + rowA + `,"op":"r","ts_ms":1700000000123,` + src + `}`,
		},
		"canal-json": {
			`{"data":[` + rowA + `],"old":null,"type":"INSERT","database":"db","table":"sales","es":1700000000123,"ts":1700000000123,"isDdl":false}`,
			`{"data":[` + rowB + `],"old":[` + rowA + `],"type":"UPDATE","database":"db","table":"sales","es":1700000000123,"ts":1700000000123,"isDdl":false}`,
			`{"data":[` + rowB + `],"old":null,"type":"DELETE","database":"db","table":"sales","es":1700000000123,"ts":1700000000123,"isDdl":false}`,
			`{"data":[` + rowA + `],"old":null,"type":"INSERT","database":"db","table":"sales","es":1700000000123,"ts":1700000000123,"isDdl":false}`,
		},
		"upsert": {rowA, rowB, "", rowA},
		"json": {
			`{"id":1,"name":"a\"b","amount":12.30,"op":"+I"}`,
			`{"id":1,"name":null,"amount":-0.01,"op":"+U"}`,
			`{"id":1,"name":null,"amount":-0.01,"op":"-D"}`,
			`{"id":1,"name":"a\"b","amount":12.30,"op":"r"}`,
		},
	}
	for name, values := range want {
		f, err := FormatByName(name)
		if err != nil {
			t.Fatal(err)
		}
		if f.Name() != name {
			t.Errorf("format %s names itself %s", name, f.Name())
		}
		for i := range c.Records {
			key, ok := f.AppendKey(nil, c, &c.Records[i])
			if !ok || string(key) != `{"id":1}` {
				t.Errorf("%s record %d key %s %v", name, i, key, ok)
			}
			v, ok := f.AppendValue([]byte("prefix"), c, &c.Records[i])
			got := string(v[len("prefix"):])
			if values[i] == "" {
				if ok || got != "" {
					t.Errorf("%s record %d: want a tombstone, got %q %v", name, i, got, ok)
				}
				continue
			}
			if !ok || got != values[i] {
				t.Errorf("%s record %d:\n got %s\nwant %s", name, i, got, values[i])
			}
			if !json.Valid([]byte(got)) {
				t.Errorf("%s record %d: invalid JSON %s", name, i, got)
			}
		}
	}
	if _, err := FormatByName("avro-confluent"); err == nil {
		t.Error("unknown format accepted")
	}
}

func TestFormatWithoutKeyFields(t *testing.T) {
	c := testChanges(t, nil)
	defer c.Release()
	f, _ := FormatByName("debezium-json")
	if k, ok := f.AppendKey(nil, c, &c.Records[0]); ok || len(k) != 0 {
		t.Errorf("key %q %v for a table without key fields", k, ok)
	}
}

// TestEncodingAllocationFree proves the steady-state per-record cost of every
// format is zero allocations once dst has grown.
func TestEncodingAllocationFree(t *testing.T) {
	c := testChanges(t, []int{1})
	defer c.Release()
	checkAllocationFree(t, c)
}

// checkAllocationFree fails unless every format encodes every record of c
// without allocating, once its buffer has grown.
func checkAllocationFree(t *testing.T, c *Changes) {
	t.Helper()
	for _, name := range []string{"debezium-json", "canal-json", "upsert", "json"} {
		f, _ := FormatByName(name)
		buf := make([]byte, 0, 4096)
		allocs := testing.AllocsPerRun(1000, func() {
			for i := range c.Records {
				buf, _ = f.AppendKey(buf[:0], c, &c.Records[i])
				buf, _ = f.AppendValue(buf[:0], c, &c.Records[i])
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per run of %d records, want 0", name, allocs, len(c.Records))
		}
	}
}

// TestEncodingAllocationFreeAllTypes checks the same for a batch holding
// every supported type.
func TestEncodingAllocationFreeAllTypes(t *testing.T) {
	mem := memory.DefaultAllocator
	var cols []arrow.Array
	var fields []arrow.Field
	for _, g := range goldenColumns() {
		arr := g.arr(mem)
		arr = array.NewSlice(arr, 0, 1)
		cols = append(cols, arr)
		fields = append(fields, arrow.Field{Name: g.name, Type: arr.DataType(), Nullable: true})
	}
	rec := array.NewRecordBatch(arrow.NewSchema(fields, nil), cols, 1)
	fn, err := RowAppender(rec)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 0, 8192)
	allocs := testing.AllocsPerRun(1000, func() { buf = fn(buf[:0], 0) })
	if allocs != 0 {
		t.Errorf("%v allocations per row, want 0", allocs)
	}
	if !json.Valid(buf) {
		t.Errorf("invalid JSON %s", buf)
	}
}

func BenchmarkDebeziumJSON(b *testing.B) {
	c := benchChanges(b, 4096)
	defer c.Release()
	f, _ := FormatByName("debezium-json")
	buf := make([]byte, 0, 4096)
	var bytes int64
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rec := &c.Records[i%len(c.Records)]
		buf, _ = f.AppendKey(buf[:0], c, rec)
		bytes += int64(len(buf))
		buf, _ = f.AppendValue(buf[:0], c, rec)
		bytes += int64(len(buf))
	}
	b.SetBytes(bytes / int64(max(b.N, 1)))
}

// benchChanges builds n inserts of rows with a mix of column types.
func benchChanges(b *testing.B, n int) *Changes {
	sc := iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "amount", Type: iceberg.DecimalTypeOf(18, 4)},
		iceberg.NestedField{ID: 4, Name: "ts", Type: iceberg.PrimitiveTypes.TimestampTz},
		iceberg.NestedField{ID: 5, Name: "score", Type: iceberg.PrimitiveTypes.Float64},
		iceberg.NestedField{ID: 6, Name: "day", Type: iceberg.PrimitiveTypes.Date},
	)
	asc, err := table.SchemaToArrowSchema(sc, nil, false, false)
	if err != nil {
		b.Fatal(err)
	}
	bld := array.NewRecordBuilder(memory.DefaultAllocator, asc)
	defer bld.Release()
	for i := range n {
		bld.Field(0).(*array.Int64Builder).Append(int64(i))
		bld.Field(1).(*array.StringBuilder).Append("customer name " + string(rune('a'+i%26)))
		bld.Field(2).(*array.Decimal128Builder).Append(decimal128.FromI64(int64(i) * 12345))
		bld.Field(3).(*array.TimestampBuilder).Append(arrow.Timestamp(1700000000000000 + int64(i)*1001))
		bld.Field(4).(*array.Float64Builder).Append(float64(i) / 7)
		bld.Field(5).(*array.Date32Builder).Append(arrow.Date32(19000 + i%365))
	}
	rec := bld.NewRecordBatch()
	c := &Changes{Table: "db.bench", SnapshotID: 1, SequenceNumber: 1, TimestampMs: 1, Schema: sc,
		KeyFieldIDs: []int{1}, Batches: []arrow.RecordBatch{rec}, Partitions: 1}
	for i := range n {
		c.Records = append(c.Records, Record{Op: OpInsert, Before: NoRow, After: RowRef{0, int32(i)}})
	}
	if err := c.Prepare(); err != nil {
		b.Fatal(err)
	}
	return c
}
