package derive

import (
	"context"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/lakegw/lakegw/changelog"
)

// TestDeriveEveryIcebergType writes one row of every Iceberg type with
// iceberg-go and checks the debezium after-image, so the arrow types the
// scanner produces for each Iceberg type are covered, not just hand-built
// arrays.
func TestDeriveEveryIcebergType(t *testing.T) {
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "b", Type: iceberg.PrimitiveTypes.Bool},
		iceberg.NestedField{ID: 2, Name: "i", Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: 3, Name: "l", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 4, Name: "f", Type: iceberg.PrimitiveTypes.Float32},
		iceberg.NestedField{ID: 5, Name: "d", Type: iceberg.PrimitiveTypes.Float64},
		iceberg.NestedField{ID: 6, Name: "dec", Type: iceberg.DecimalTypeOf(20, 3)},
		iceberg.NestedField{ID: 7, Name: "date", Type: iceberg.PrimitiveTypes.Date},
		iceberg.NestedField{ID: 8, Name: "time", Type: iceberg.PrimitiveTypes.Time},
		iceberg.NestedField{ID: 9, Name: "ts", Type: iceberg.PrimitiveTypes.Timestamp},
		iceberg.NestedField{ID: 10, Name: "tstz", Type: iceberg.PrimitiveTypes.TimestampTz},
		iceberg.NestedField{ID: 11, Name: "s", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 12, Name: "fixed", Type: iceberg.FixedTypeOf(2)},
		iceberg.NestedField{ID: 13, Name: "bin", Type: iceberg.PrimitiveTypes.Binary},
		iceberg.NestedField{ID: 14, Name: "st", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 20, Name: "x", Type: iceberg.PrimitiveTypes.Int32},
			{ID: 21, Name: "y", Type: iceberg.PrimitiveTypes.String},
		}}},
		iceberg.NestedField{ID: 15, Name: "lst", Type: &iceberg.ListType{ElementID: 22, Element: iceberg.PrimitiveTypes.Int64}},
		iceberg.NestedField{ID: 16, Name: "m", Type: &iceberg.MapType{KeyID: 23, KeyType: iceberg.PrimitiveTypes.String, ValueID: 24, ValueType: iceberg.PrimitiveTypes.Int32}},
		iceberg.NestedField{ID: 17, Name: "mi", Type: &iceberg.MapType{KeyID: 25, KeyType: iceberg.PrimitiveTypes.Int32, ValueID: 26, ValueType: iceberg.PrimitiveTypes.String}},
	)
	cat := newTestCatalog(t)
	tbl := createTable(t, cat, "types", sc)
	tbl = appendJSON(t, tbl, `[{"b":true,"i":-7,"l":9007199254740993,"f":1.5,"d":-0.25,"dec":"12345678901234567.891",
		"date":"2024-02-29","time":"13:14:15.016","ts":"2020-12-30 12:13:14.123456","tstz":"2020-12-30T12:13:14.5Z",
		"s":"x\"y","fixed":"AAE=","bin":"aGk=","st":{"x":1,"y":null},"lst":[1,null,3],
		"m":[{"key":"k","value":2}],"mi":[{"key":5,"value":"v"}]},
		{"b":null,"i":null,"l":null,"f":null,"d":null,"dec":null,"date":null,"time":null,"ts":null,"tstz":null,
		"s":null,"fixed":null,"bin":null,"st":null,"lst":null,"m":null,"mi":null}]`, 0)
	hist, err := changelog.MainHistory(tbl.Metadata())
	if err != nil {
		t.Fatal(err)
	}
	c, err := Derive(context.Background(), tbl, hist[0], Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	if len(c.Records) != 2 {
		t.Fatalf("%d records, want 2", len(c.Records))
	}
	f, _ := changelog.FormatByName("json")
	want := []string{
		`{"b":true,"i":-7,"l":9007199254740993,"f":1.5,"d":-0.25,"dec":12345678901234567.891,` +
			`"date":"2024-02-29","time":"13:14:15.016","ts":"2020-12-30 12:13:14.123456","tstz":"2020-12-30 12:13:14.5Z",` +
			`"s":"x\"y","fixed":"AAE=","bin":"aGk=","st":{"x":1,"y":null},"lst":[1,null,3],` +
			`"m":{"k":2},"mi":[{"key":5,"value":"v"}],"op":"+I"}`,
		`{"b":null,"i":null,"l":null,"f":null,"d":null,"dec":null,"date":null,"time":null,"ts":null,"tstz":null,` +
			`"s":null,"fixed":null,"bin":null,"st":null,"lst":null,"m":null,"mi":null,"op":"+I"}`,
	}
	for i := range c.Records {
		got, _ := f.AppendValue(nil, c, &c.Records[i])
		if string(got) != want[i] {
			t.Errorf("row %d:\n got %s\nwant %s", i, got, want[i])
		}
	}
}
