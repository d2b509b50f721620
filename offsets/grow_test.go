package offsets

import (
	"context"
	"testing"
)

// A raw topic grows from 2 to 3 partitions: the existing partitions keep
// their offsets and epochs (no consumer validating its position is
// truncated), the new one starts empty, and the next snapshot is indexed
// in all three.
func TestOpenGrowingKeepsExistingPartitions(t *testing.T) {
	ctx := context.Background()
	tp := newTopic(t, 2)
	for seq := int64(1); seq <= 3; seq++ {
		if err := tp.Append(ctx, []Snapshot{{SnapshotID: seq, SequenceNumber: seq, Counts: []int64{4, 2}}}); err != nil {
			t.Fatal(err)
		}
	}
	last, _ := tp.Locate(0, 11)
	leader := tp.LeaderEpoch()
	grown, err := OpenGrowing(ctx, tp.store, "ns.t", "uuid-1", 3)
	if err != nil {
		t.Fatal(err)
	}
	if grown.Partitions() != 3 || grown.HighWatermark(0) != 12 || grown.HighWatermark(1) != 6 || grown.HighWatermark(2) != 0 {
		t.Fatalf("partitions %d, high watermarks %d %d %d", grown.Partitions(), grown.HighWatermark(0), grown.HighWatermark(1), grown.HighWatermark(2))
	}
	if grown.LeaderEpoch() != leader {
		t.Fatalf("leader epoch %d, was %d", grown.LeaderEpoch(), leader)
	}
	if _, truncated := validate(t, grown, consumer{"at the head of partition 0", 12, last.Epoch}); truncated {
		t.Fatal("a consumer of partition 0 was truncated by the growth")
	}
	if err := grown.Append(ctx, []Snapshot{{SnapshotID: 4, SequenceNumber: 4, Counts: []int64{1, 1, 5}}}); err != nil {
		t.Fatal(err)
	}
	if grown.HighWatermark(2) != 5 {
		t.Fatalf("new partition's high watermark %d, want 5", grown.HighWatermark(2))
	}
	again, err := Open(ctx, tp.store, "ns.t", "uuid-1", 3)
	if err != nil || again.HighWatermark(0) != 13 || again.HighWatermark(2) != 5 {
		t.Fatalf("reopened: %v, high watermarks %d %d", err, again.HighWatermark(0), again.HighWatermark(2))
	}
}
