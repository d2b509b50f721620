package topics

import (
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// The encoding names everything that shapes a topic's records at its
// offsets (issue 12: caches keyed by it, a new epoch when it changes):
// another format, key, partitioning or current schema each give another
// encoding; compression and batch size do not (they change a batch's
// bytes, which the batch cache keys on its own), nor does a property
// unrelated to the records.
func TestEncodingNamesWhatShapesRecords(t *testing.T) {
	sc := iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "s", Type: iceberg.PrimitiveTypes.String})
	meta, err := table.NewMetadata(sc, iceberg.UnpartitionedSpec, table.UnsortedSortOrder, "file:///w/t", nil)
	if err != nil {
		t.Fatal(err)
	}
	tbl := table.New(table.Identifier{"ns", "t"}, meta, "file:///w/t/metadata/v1.json", nil, nil)
	base := DefaultTopicConfig()
	enc := encodingOf(tbl, base)

	differs := map[string]func(c *TopicConfig){
		"format":      func(c *TopicConfig) { c.Format = "upsert" },
		"key columns": func(c *TopicConfig) { c.KeyColumns = []string{"s"} },
		"partitions":  func(c *TopicConfig) { c.Partitions = 4 },
	}
	for what, change := range differs {
		c := base
		change(&c)
		if encodingOf(tbl, c) == enc {
			t.Errorf("another %s, the same encoding %q", what, enc)
		}
	}
	same := map[string]func(c *TopicConfig){
		"compression":   func(c *TopicConfig) { c.Compression = "zstd" },
		"batch records": func(c *TopicConfig) { c.BatchRecords = 7 },
		"retention":     func(c *TopicConfig) { c.RetentionMs = 1 },
	}
	for what, change := range same {
		c := base
		change(&c)
		if got := encodingOf(tbl, c); got != enc {
			t.Errorf("another %s changed the encoding: %q, was %q", what, got, enc)
		}
	}

	// A new current schema (a column added) is another encoding.
	b, err := table.MetadataBuilderFromBase(meta, "file:///w/t/metadata/v1.json")
	if err != nil {
		t.Fatal(err)
	}
	wider := iceberg.NewSchemaWithIdentifiers(1, []int{1}, append(sc.Fields(),
		iceberg.NestedField{ID: 3, Name: "n", Type: iceberg.PrimitiveTypes.Int32})...)
	if err := b.AddSchema(wider); err != nil {
		t.Fatal(err)
	}
	if err := b.SetCurrentSchemaID(1); err != nil {
		t.Fatal(err)
	}
	meta2, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	if encodingOf(table.New(tbl.Identifier(), meta2, "file:///w/t/metadata/v2.json", nil, nil), base) == enc {
		t.Errorf("another current schema, the same encoding %q", enc)
	}
}
