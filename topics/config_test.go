package topics

import (
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/changelog"
)

func TestTopicConfigRetentionProperties(t *testing.T) {
	// Operator defaults without retention (as serve builds them) get
	// Kafka's.
	c, err := TopicConfig{Format: "json", Partitions: 1, Compression: "none"}.withTableProps(iceberg.Properties{})
	if err != nil {
		t.Fatal(err)
	}
	if c.RetentionMs != 604800000 || c.RetentionBytes != -1 || c.MaxPinMs != 86400000 || c.MaxPinSnapshots != 3600 {
		t.Fatalf("defaults: %+v", c)
	}
	c, err = DefaultTopicConfig().withTableProps(iceberg.Properties{
		changelog.PropRetentionMs: "3600000", changelog.PropRetentionBytes: "1073741824", changelog.PropMaxPinMs: "0",
		changelog.PropMaxPinSnapshots: "50",
	})
	if err != nil {
		t.Fatal(err)
	}
	if c.RetentionMs != 3600000 || c.RetentionBytes != 1<<30 || c.MaxPinMs != 0 || c.MaxPinSnapshots != 50 {
		t.Fatalf("from properties: %+v", c)
	}
	for _, bad := range []iceberg.Properties{
		{changelog.PropRetentionMs: "7d"}, {changelog.PropRetentionBytes: "-2"}, {changelog.PropMaxPinMs: "-1"},
		{changelog.PropMaxPinSnapshots: "0"}, {changelog.PropMaxPinSnapshots: "many"},
	} {
		if _, err := DefaultTopicConfig().withTableProps(bad); err == nil {
			t.Fatalf("%v accepted", bad)
		}
	}
}

func TestLogRetention(t *testing.T) {
	c := DefaultTopicConfig()
	c.RetentionMs, c.RetentionBytes = 3600000, 1<<20
	for _, tc := range []struct {
		name  string
		props iceberg.Properties
		want  LogRetention
	}{
		{"lsm table keeps its changelog for the topic's retention",
			iceberg.Properties{changelog.PropLSM: "true", table.MaxSnapshotAgeMsKey: "60000"}, LogRetention{Ms: 3600000, Bytes: 1 << 20, Own: true}},
		{"other table, no snapshot expiry age: unbounded", iceberg.Properties{}, LogRetention{Ms: -1, Bytes: -1}},
		{"other table: its snapshot expiry age", iceberg.Properties{table.MaxSnapshotAgeMsKey: "60000"}, LogRetention{Ms: 60000, Bytes: -1}},
		{"other table, unreadable age: unbounded", iceberg.Properties{table.MaxSnapshotAgeMsKey: "1h"}, LogRetention{Ms: -1, Bytes: -1}},
	} {
		if got := c.LogRetention(tc.props); got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// Records per batch come from the table (lakegw.batch-records) over the
// operator's default, so every gateway of a table cuts the same batches;
// a value outside [1, MaxBatchRecords] is refused, and no value at all is
// DefaultBatchRecords.
func TestTopicConfigBatchRecords(t *testing.T) {
	c, err := TopicConfig{Format: "json", Partitions: 1, Compression: "none"}.withTableProps(iceberg.Properties{})
	if err != nil || c.BatchRecords != DefaultBatchRecords {
		t.Fatalf("no value: %d, %v; want %d", c.BatchRecords, err, DefaultBatchRecords)
	}
	op := DefaultTopicConfig()
	op.BatchRecords = 250
	if c, err = op.withTableProps(iceberg.Properties{}); err != nil || c.BatchRecords != 250 {
		t.Fatalf("operator default: %d, %v; want 250", c.BatchRecords, err)
	}
	if c, err = op.withTableProps(iceberg.Properties{PropBatchRecords: "64"}); err != nil || c.BatchRecords != 64 {
		t.Fatalf("table property: %d, %v; want 64", c.BatchRecords, err)
	}
	for _, bad := range []string{"0", "-3", "1k", "100001"} {
		if _, err := op.withTableProps(iceberg.Properties{PropBatchRecords: bad}); err == nil {
			t.Errorf("%s=%s accepted", PropBatchRecords, bad)
		}
	}
}
