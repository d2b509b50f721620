package lsm

import (
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/changelog"
)

// The log start moves a checkpoint at a time: while the next checkpoint
// is past retention.ms, or the changelog kept after it alone reaches
// retention.bytes (Kafka deletes whole segments on either bound).
func TestExpiredCheckpointsByAgeAndBytes(t *testing.T) {
	now := time.UnixMilli(1_000_000)
	cp := func(seq, ageMs int64) checkpoint {
		return checkpoint{tag: "t", snap: &table.Snapshot{SnapshotID: seq, SequenceNumber: seq, TimestampMs: now.UnixMilli() - ageMs}}
	}
	cps := []checkpoint{cp(10, 9000), cp(20, 6000), cp(30, 3000), cp(40, 0)}
	log := &changelog.LSMLog{Buckets: 1}
	for seq := int64(11); seq <= 39; seq++ {
		log.Tail = append(log.Tail, changelog.LSMLogEntry{SnapshotID: seq, SequenceNumber: seq, Counts: []int64{1}, Bytes: 100})
	}
	for _, tc := range []struct {
		name string
		ret  changelog.Retention
		want int
		hold int64
	}{
		{"within retention.ms", changelog.Retention{Ms: 10000, Bytes: -1}, 0, 0},
		{"next checkpoint just past retention.ms", changelog.Retention{Ms: 6000, Bytes: -1}, 1, 0},
		{"two checkpoints past retention.ms", changelog.Retention{Ms: 3000, Bytes: -1}, 2, 0},
		{"a checkpoint stays until the next one is past retention", changelog.Retention{Ms: 1, Bytes: -1}, 2, 0},
		{"unbounded", changelog.Retention{Ms: -1, Bytes: -1}, 0, 0},
		// After checkpoint 20: entries 21..39 = 1,900 bytes; after 30: 900.
		{"bytes after the next checkpoint below retention.bytes", changelog.Retention{Ms: -1, Bytes: 2000}, 0, 0},
		{"bytes after the next checkpoint reach retention.bytes", changelog.Retention{Ms: -1, Bytes: 1900}, 1, 0},
		{"bytes after two checkpoints reach it", changelog.Retention{Ms: -1, Bytes: 900}, 2, 0},
		{"either bound", changelog.Retention{Ms: 6000, Bytes: 900}, 2, 0},
		{"nothing logged after the newest checkpoint yet: the one before it stays", changelog.Retention{Ms: 1, Bytes: 1}, 2, 0},
		// A pin at checkpoint 20's time needs the changes after it: 10 may go.
		{"a pin holds what it needs", changelog.Retention{Ms: 1, Bytes: -1}, 1, now.UnixMilli() - 6000},
		{"a pin between two checkpoints holds the older", changelog.Retention{Ms: 1, Bytes: -1}, 0, now.UnixMilli() - 7000},
		{"a pin newer than retention holds nothing more", changelog.Retention{Ms: 3000, Bytes: -1}, 2, now.UnixMilli() - 1000},
	} {
		got := expiredCheckpoints(cps, log, tc.ret, now, tc.hold)
		if len(got) != tc.want {
			t.Errorf("%s: %d checkpoints expire, want %d", tc.name, len(got), tc.want)
		}
		for i, c := range got {
			if c.snap != cps[i].snap {
				t.Errorf("%s: expires checkpoint %d, want the oldest first", tc.name, c.snap.SnapshotID)
			}
		}
	}
}
