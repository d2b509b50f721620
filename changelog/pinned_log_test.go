package changelog

import (
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"
)

func pinnedSnap(id, parent, seq int64) table.Snapshot {
	s := table.Snapshot{SnapshotID: id, SequenceNumber: seq, TimestampMs: 1000 * seq, ManifestList: "file:///t/metadata/snap-" + string(rune('a'+id)) + ".avro",
		Summary: &table.Summary{Operation: table.OpOverwrite, Properties: map[string]string{"added-records": "1"}}}
	if parent != 0 {
		s.ParentSnapshotID = &parent
	}
	return s
}

// TestPinnedLogRoundTripAndDamage checks that a pinned log reads back as
// written (summaries included: derivation reads the operation), and that
// a log whose entries do not form one chain, or of another version, is an
// error naming what is wrong rather than a history with holes.
func TestPinnedLogRoundTripAndDamage(t *testing.T) {
	l := PinnedLog{Snapshots: []table.Snapshot{pinnedSnap(1, 0, 1), pinnedSnap(2, 1, 2), pinnedSnap(3, 2, 3)}}
	body, err := EncodePinnedLog(l)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodePinnedLog(body)
	if err != nil {
		t.Fatal(err)
	}
	if got.Len() != 3 || got.Snapshots[2].SnapshotID != 3 || *got.Snapshots[2].ParentSnapshotID != 2 ||
		got.Snapshots[1].Summary.Operation != table.OpOverwrite || got.Snapshots[0].ManifestList != l.Snapshots[0].ManifestList {
		t.Fatalf("read back %+v", got.Snapshots)
	}
	for name, bad := range map[string]PinnedLog{
		"does not follow":      {Snapshots: []table.Snapshot{pinnedSnap(1, 0, 1), pinnedSnap(3, 2, 3)}},
		"sequence number":      {Snapshots: []table.Snapshot{pinnedSnap(1, 0, 5), pinnedSnap(2, 1, 4)}},
		"has no manifest list": {Snapshots: []table.Snapshot{{SnapshotID: 1, SequenceNumber: 1}}},
	} {
		body, err := EncodePinnedLog(bad)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := DecodePinnedLog(body); err == nil || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: decoded with error %v", name, err)
		}
	}
	if _, err := DecodePinnedLog([]byte(`{"version":9,"snapshots":[]}`)); err == nil || !strings.Contains(err.Error(), "version 9") {
		t.Errorf("another version decoded with error %v", err)
	}
	if _, err := DecodePinnedLog([]byte(`{"version":1,"snap`)); err == nil {
		t.Error("a truncated log decoded")
	}
}
