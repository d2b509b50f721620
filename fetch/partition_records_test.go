package fetch

import (
	"slices"
	"testing"

	"github.com/rs/zerolog"

	"github.com/lakegw/lakegw/changelog"
	"github.com/lakegw/lakegw/offsets"
)

// TestPartitionRecordsTellsAPrefixFromItsSnapshot: once expiry turns a
// snapshot into a compacted prefix, the prefix's records (the live rows)
// are not the snapshot's changes, though the snapshot id is the same. The
// records of a partition must be those of the segment asked for.
func TestPartitionRecordsTellsAPrefixFromItsSnapshot(t *testing.T) {
	r, err := NewReader(Config{}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	changes := &changelog.Changes{SnapshotID: 7, Partitions: 2, Records: []changelog.Record{{Partition: 0}, {Partition: 1}, {Partition: 1}}}
	prefix := &changelog.Changes{SnapshotID: 7, Partitions: 2, Records: []changelog.Record{{Partition: 1}, {Partition: 0}, {Partition: 0}, {Partition: 1}}}
	got := r.partitionRecords("t", offsets.Segment{SnapshotID: 7, Kind: offsets.KindChanges}, changes, 0)
	if !slices.Equal(got, []int32{0}) {
		t.Fatalf("changes, partition 0: %v", got)
	}
	got = r.partitionRecords("t", offsets.Segment{SnapshotID: 7, Kind: offsets.KindCompactedPrefix}, prefix, 0)
	if !slices.Equal(got, []int32{1, 2}) {
		t.Fatalf("compacted prefix of the same snapshot, partition 0: %v, want [1 2]", got)
	}
}
