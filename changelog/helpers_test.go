package changelog

// Test fixtures for the formats' tests: a schema and a reader. derive/'s
// tests have the tables (main-branch history is tested there too).

import (
	"strings"

	"github.com/apache/iceberg-go"
)

func testSchema() *iceberg.Schema {
	return iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "amount", Type: iceberg.DecimalTypeOf(10, 2)},
	)
}

func stringsReader(s string) *strings.Reader { return strings.NewReader(s) }
