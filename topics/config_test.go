package topics

import (
	"testing"

	"github.com/apache/iceberg-go"
)

func TestTopicConfigRetentionProperties(t *testing.T) {
	// Operator defaults without retention (as serve builds them) get
	// Kafka's.
	c, err := TopicConfig{Format: "json", Partitions: 1, Compression: "none"}.withTableProps(iceberg.Properties{})
	if err != nil {
		t.Fatal(err)
	}
	if c.RetentionMs != 604800000 || c.RetentionBytes != -1 || c.MaxPinMs != 86400000 {
		t.Fatalf("defaults: %+v", c)
	}
	c, err = DefaultTopicConfig().withTableProps(iceberg.Properties{
		PropRetentionMs: "3600000", PropRetentionBytes: "1073741824", PropMaxPinMs: "0",
	})
	if err != nil {
		t.Fatal(err)
	}
	if c.RetentionMs != 3600000 || c.RetentionBytes != 1<<30 || c.MaxPinMs != 0 {
		t.Fatalf("from properties: %+v", c)
	}
	for _, bad := range []iceberg.Properties{
		{PropRetentionMs: "7d"}, {PropRetentionBytes: "-2"}, {PropMaxPinMs: "-1"},
	} {
		if _, err := DefaultTopicConfig().withTableProps(bad); err == nil {
			t.Fatalf("%v accepted", bad)
		}
	}
}
