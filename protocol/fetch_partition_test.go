package protocol

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lakegw/lakegw/offsets"
	"github.com/lakegw/lakegw/offsets/offsetstest"
	"github.com/lakegw/lakegw/topics"
)

// A consumer in the middle of a compacted prefix must restart from the
// prefix's base only if it read those offsets before the prefix rewrote
// them: a rollback after the compaction moves the leader epoch on without
// touching the prefix.
func TestCompactedPrefixDivergesOnlyForConsumersOfOlderEpochs(t *testing.T) {
	ctx := context.Background()
	idx := offsetstest.Open(t, "ns.t", 1)
	add := func(id, n int64) {
		t.Helper()
		if err := idx.Append(ctx, []offsets.Snapshot{{SnapshotID: id, Counts: []int64{n}}}); err != nil {
			t.Fatal(err)
		}
	}
	add(1, 10)
	add(2, 6)
	add(3, 3)
	// Snapshot 1 expired: 8 live rows at offsets 8..15 under epoch 1.
	if err := idx.CompactPrefix(ctx, 1, []int64{8}); err != nil {
		t.Fatal(err)
	}
	add(4, 2)
	// Snapshot 4 rolled back: epoch 2 from offset 19.
	if err := idx.Truncate(ctx, 2); err != nil {
		t.Fatal(err)
	}
	tp := &topics.Topic{Name: "ns.t", Index: idx}
	s := &Server{}
	for _, tc := range []struct {
		name              string
		lastEpoch         int32
		offset            int64
		wantEpoch, wantAt int32
	}{
		{"read the prefix under its epoch", 1, 12, -1, -1},
		{"read the prefix under a later epoch", 2, 12, -1, -1},
		{"read the history the prefix replaced", 0, 12, 0, 8},
		{"at the prefix's start", 0, 8, -1, -1},
		{"past the prefix", 1, 17, -1, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.FetchOffset, rp.LastFetchedEpoch, rp.CurrentLeaderEpoch = tc.offset, tc.lastEpoch, -1
			op := kmsg.NewFetchResponseTopicPartition()
			// No byte budget: the partition is checked, nothing is read.
			s.readPartition(ctx, tp, 12, rp, 0, false, &op, nil)
			if op.ErrorCode != 0 {
				t.Fatalf("error code %d", op.ErrorCode)
			}
			if got := op.DivergingEpoch; got.Epoch != tc.wantEpoch || got.EndOffset != int64(tc.wantAt) {
				t.Fatalf("diverging epoch %d at %d, want %d at %d", got.Epoch, got.EndOffset, tc.wantEpoch, tc.wantAt)
			}
			if op.HighWatermark != 19 {
				t.Fatalf("high watermark %d, want 19", op.HighWatermark)
			}
		})
	}
}
