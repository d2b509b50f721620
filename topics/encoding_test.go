package topics

import (
	"strings"
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
	enc := encodingOf(tbl, base).Name

	differs := map[string]func(c *TopicConfig){
		"format":      func(c *TopicConfig) { c.Format = "upsert" },
		"key columns": func(c *TopicConfig) { c.KeyColumns = []string{"s"} },
		"partitions":  func(c *TopicConfig) { c.Partitions = 4 },
	}
	for what, change := range differs {
		c := base
		change(&c)
		if encodingOf(tbl, c).Name == enc {
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
		if got := encodingOf(tbl, c).Name; got != enc {
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
	evolved := table.New(tbl.Identifier(), meta2, "file:///w/t/metadata/v2.json", nil, nil)
	next := encodingOf(evolved, base).Name
	if next == enc {
		t.Errorf("another current schema, the same encoding %q", enc)
	}
	// Records in another schema are the same events at the same offsets:
	// consumers keep their positions (offsets.Index.SetEncoding).
	if !sameLayout(enc, next) {
		t.Errorf("a new current schema changed the layout: %q -> %q", enc, next)
	}
	// Records as written do not change with the current schema, and the
	// mode itself only changes how they are written.
	asWritten := base
	asWritten.SchemaMode = SchemaAsWritten
	if a, b := encodingOf(tbl, asWritten).Name, encodingOf(evolved, asWritten).Name; a != b {
		t.Errorf("as written, a new current schema changed the encoding: %q -> %q", a, b)
	} else if !sameLayout(a, enc) {
		t.Errorf("the schema mode changed the layout: %q -> %q", enc, a)
	}
	// Another format, key or partitioning puts other records at the
	// offsets; so does an encoding written before schema modes existed
	// for another format. The same format in the old name is the same
	// layout.
	for what, change := range differs {
		c := base
		change(&c)
		if sameLayout(enc, encodingOf(tbl, c).Name) {
			t.Errorf("another %s kept the layout", what)
		}
	}
	old := "table=" + meta.TableUUID().String() + " schema=0 format=debezium-json key= partitions=1"
	if !sameLayout(old, enc) {
		t.Errorf("an encoding recorded before schema modes (%q) is another layout than %q", old, enc)
	}
	if sameLayout(strings.Replace(old, "debezium-json", "upsert", 1), enc) {
		t.Errorf("an old encoding of another format is the same layout")
	}
}
