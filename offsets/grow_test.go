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

// A raw topic commits many times a second for months: its snapshots keep
// the leader epoch instead of taking epochStride per sequence number, which
// reached the largest epoch after 2^31/4 commits (ten months at 20 a
// second), past which a rewrite failed. Snapshots indexed before (one epoch
// each) keep theirs, and epochs never go down along the log; a rollback
// still fences consumers under a new epoch.
func TestRawTopicEpochsStaySteadyAcrossCommits(t *testing.T) {
	ctx := context.Background()
	tp := newTopic(t, 1)
	for seq := int64(1); seq <= 2; seq++ {
		if err := tp.Append(ctx, []Snapshot{{SnapshotID: seq, SequenceNumber: seq, Counts: []int64{3}}}); err != nil {
			t.Fatal(err)
		}
	}
	before := tp.LeaderEpoch()
	raw, err := OpenGrowing(ctx, tp.store, "ns.t", "uuid-1", 1)
	if err != nil {
		t.Fatal(err)
	}
	// Sequence numbers of a topic that has committed for a year.
	const base = int64(1) << 30
	for i := range int64(5) {
		seq := base + i*1_000_000
		if err := raw.Append(ctx, []Snapshot{{SnapshotID: 10 + i, SequenceNumber: seq, Counts: []int64{2}}}); err != nil {
			t.Fatal(err)
		}
	}
	if got := raw.LeaderEpoch(); got != before {
		t.Fatalf("leader epoch %d after commits of sequence numbers past 2^30, want it to stay %d", got, before)
	}
	prev := int32(-1)
	for off := int64(0); off < raw.HighWatermark(0); off++ {
		seg, ok := raw.Locate(0, off)
		if !ok {
			t.Fatalf("offset %d not located", off)
		}
		if seg.Epoch < prev {
			t.Fatalf("epoch goes down at offset %d: %d after %d", off, seg.Epoch, prev)
		}
		prev = seg.Epoch
	}
	if err := raw.Truncate(ctx, 6); err != nil {
		t.Fatal(err)
	}
	if raw.LeaderEpoch() <= before {
		t.Fatalf("a rollback left the leader epoch at %d", raw.LeaderEpoch())
	}
	// Reopened, as a restarted gateway does: still steady.
	again, err := OpenGrowing(ctx, tp.store, "ns.t", "uuid-1", 1)
	if err != nil {
		t.Fatal(err)
	}
	leader := again.LeaderEpoch()
	if err := again.Append(ctx, []Snapshot{{SnapshotID: 99, SequenceNumber: base * 2, Counts: []int64{1}}}); err != nil {
		t.Fatal(err)
	}
	if again.LeaderEpoch() != leader {
		t.Fatalf("reopened raw topic: leader epoch %d, want %d", again.LeaderEpoch(), leader)
	}
}
