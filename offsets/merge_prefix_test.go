package offsets

import (
	"context"
	"testing"
)

// TestMergePrefixTruncatesNoConsumer: snapshots 1..5 (4 records each,
// offsets 0..19) of a topic read by offset; the first three merge into a
// prefix of their 12 records. Every consumer, wherever its last record
// was, keeps its position, twice over (a second merge) and after a reload.
func TestMergePrefixTruncatesNoConsumer(t *testing.T) {
	ctx := context.Background()
	tp := newTopic(t, 1)
	for seq := int64(1); seq <= 5; seq++ {
		if err := tp.Append(ctx, []Snapshot{{SnapshotID: seq, SequenceNumber: seq, Counts: []int64{4}}}); err != nil {
			t.Fatal(err)
		}
	}
	epochOf := func(offset int64) int32 {
		g, ok := tp.Locate(0, offset)
		if !ok {
			t.Fatalf("offset %d not indexed", offset)
		}
		return g.Epoch
	}
	consumers := []consumer{
		{"in the first snapshot", 2, epochOf(0)},
		{"in the merged third snapshot", 10, epochOf(8)},
		{"at the end of the merged snapshots", 12, epochOf(8)},
		{"in the fourth snapshot", 14, epochOf(12)},
		{"at the head", 20, epochOf(16)},
	}
	leader := tp.LeaderEpoch()
	if err := tp.MergePrefix(ctx, 2, []int64{11}); err == nil {
		t.Fatal("a merged prefix of fewer records than it replaces was accepted")
	}
	if err := tp.MergePrefix(ctx, 2, []int64{12}); err != nil {
		t.Fatal(err)
	}
	if tp.LogStart(0) != 0 || tp.HighWatermark(0) != 20 || tp.LeaderEpoch() != leader || tp.FenceEpoch() > leader {
		t.Fatalf("log start %d, high watermark %d, leader epoch %d (was %d), fence %d", tp.LogStart(0), tp.HighWatermark(0), tp.LeaderEpoch(), leader, tp.FenceEpoch())
	}
	if prefix, _ := tp.Locate(0, 11); prefix.Kind != KindCompactedPrefix || prefix.BaseOffset != 0 || prefix.Count != 12 || prefix.Epoch > epochOf(12) {
		t.Fatalf("prefix %+v, next snapshot's epoch %d", prefix, epochOf(12))
	}
	check := func(tp *Index, when string) {
		for _, c := range consumers {
			if to, truncated := validate(t, tp, c); truncated {
				t.Errorf("%s: consumer %s (at %d, epoch %d) truncated to %d", when, c.name, c.position, c.lastEpoch, to)
			}
		}
	}
	check(tp, "after a merge")
	// A consumer that read part of the prefix itself.
	if _, truncated := validate(t, tp, consumer{"in the prefix", 5, epochOf(5)}); truncated {
		t.Error("a consumer reading the prefix was truncated")
	}
	if err := tp.MergePrefix(ctx, 1, []int64{16}); err != nil {
		t.Fatal(err)
	}
	check(tp, "after a second merge")
	again, err := Open(ctx, tp.store, "ns.t", "uuid-1", 1)
	if err != nil {
		t.Fatal(err)
	}
	check(again, "reloaded")
}
