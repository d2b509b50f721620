package lsm

import (
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
)

func TestParseSchema(t *testing.T) {
	sc, err := ParseSchema("id long not null, price decimal(12, 2) not null,\tname string, big DECIMAL(38,10)")
	if err != nil {
		t.Fatal(err)
	}
	want := []iceberg.NestedField{
		{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		{ID: 2, Name: "price", Type: iceberg.DecimalTypeOf(12, 2), Required: true},
		{ID: 3, Name: "name", Type: iceberg.PrimitiveTypes.String},
		{ID: 4, Name: "big", Type: iceberg.DecimalTypeOf(38, 10)},
	}
	got := sc.Fields()
	if len(got) != len(want) {
		t.Fatalf("fields %v", got)
	}
	for i := range want {
		if got[i].ID != want[i].ID || got[i].Name != want[i].Name || !got[i].Type.Equals(want[i].Type) || got[i].Required != want[i].Required {
			t.Errorf("field %d: %v, want %v", i, got[i], want[i])
		}
	}
	for spec, msg := range map[string]string{
		"id":                        "want NAME TYPE",
		"id long, x decimal(40, 2)": "precision must be 1-38",
		"x decimal(5, 6)":           "scale at most the precision",
		"x money":                   "unknown type",
		"x long nullable":           "unexpected",
		"":                          "no columns",
	} {
		if _, err := ParseSchema(spec); err == nil || !strings.Contains(err.Error(), msg) {
			t.Errorf("%q: error %v, want one saying %q", spec, err, msg)
		}
	}
}
