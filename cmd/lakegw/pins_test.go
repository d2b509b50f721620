package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lakegw/lakegw/offsets"
	"github.com/lakegw/lakegw/protocol/groups"
	"github.com/lakegw/lakegw/state"
)

const pinTopic = "ns.t"

// pinFixture is a two-partition offset index in a real state store and a
// real coordinator the test commits to as assign() users do.
//
//	snapshot  time   partition 0     partition 1
//	1         1000   offsets 0-2     -
//	2         2000   offsets 3-4     offsets 0-3
//	3         3000   -               offset 4
type pinFixture struct {
	idx   *offsets.Index
	coord *groups.Coordinator
	f     pinFinder
}

func newPinFixture(t *testing.T) *pinFixture {
	t.Helper()
	ctx := context.Background()
	store, err := state.Open(ctx, filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	idx, err := offsets.Open(ctx, store, pinTopic, "uuid", 2)
	if err != nil {
		t.Fatal(err)
	}
	if err := idx.Append(ctx, []offsets.Snapshot{
		{SnapshotID: 1, SequenceNumber: 1, TimestampMs: 1000, Counts: []int64{3, 0}},
		{SnapshotID: 2, SequenceNumber: 2, TimestampMs: 2000, Counts: []int64{2, 4}},
		{SnapshotID: 3, SequenceNumber: 3, TimestampMs: 3000, Counts: []int64{0, 1}},
	}); err != nil {
		t.Fatal(err)
	}
	coord := groups.New(nil, zerolog.Nop(), groups.Options{})
	t.Cleanup(coord.Close)
	if err := coord.Open(ctx); err != nil {
		t.Fatal(err)
	}
	fx := &pinFixture{idx: idx, coord: coord}
	fx.f = pinFinder{
		index: func(name string) (pinIndex, bool) {
			if name != pinTopic {
				return nil, false
			}
			return idx, true
		},
		committed: coordinatorOffsets{coord},
	}
	return fx
}

func (fx *pinFixture) commit(t *testing.T, group string, parts map[int32]int64) {
	t.Helper()
	r := kmsg.NewPtrOffsetCommitRequest()
	r.Version, r.Group, r.Generation = 8, group, -1
	rt := kmsg.OffsetCommitRequestTopic{Topic: pinTopic}
	for p, o := range parts {
		rt.Partitions = append(rt.Partitions, kmsg.OffsetCommitRequestTopicPartition{Partition: p, Offset: o, LeaderEpoch: -1})
	}
	r.Topics = []kmsg.OffsetCommitRequestTopic{rt}
	for _, p := range fx.coord.OffsetCommit(context.Background(), r).Topics[0].Partitions {
		if p.ErrorCode != 0 {
			t.Fatalf("commit %s partition %d: code %d", group, p.Partition, p.ErrorCode)
		}
	}
}

func (fx *pinFixture) oldest(t *testing.T, topic string) (int64, bool) {
	t.Helper()
	return fx.f.oldestNeeded(context.Background(), topic)
}

func TestConsumerPinsOldestSnapshotNeeded(t *testing.T) {
	fx := newPinFixture(t)
	if _, ok := fx.oldest(t, pinTopic); ok {
		t.Fatal("pinned with no committed offset")
	}
	// Past the high watermark: no record, nothing needed.
	fx.commit(t, "ahead", map[int32]int64{0: 6, 1: 9})
	if _, ok := fx.oldest(t, pinTopic); ok {
		t.Fatal("a group past the high watermark pins history")
	}
	// At the high watermark: the last records consumed, partition 1
	// offset 4 (snapshot 3) and partition 0 offset 4 (snapshot 2).
	fx.commit(t, "caught-up", map[int32]int64{0: 5, 1: 5})
	if ms, ok := fx.oldest(t, pinTopic); !ok || ms != 2000 {
		t.Fatalf("oldest needed %d %v, want snapshot 2's 2000", ms, ok)
	}
	// Partition 0 offset 3 is the first record of snapshot 2: the group
	// consumed snapshot 1's last record, and validates with it.
	fx.commit(t, "c", map[int32]int64{0: 3})
	if ms, ok := fx.oldest(t, pinTopic); !ok || ms != 1000 {
		t.Fatalf("oldest needed %d %v, want snapshot 1's 1000", ms, ok)
	}
	if _, ok := fx.oldest(t, "ns.other"); ok {
		t.Fatal("an unknown topic is pinned")
	}
	// At the log start: the record there.
	fx.commit(t, "a", map[int32]int64{0: 0, 1: 5})

	want := "group a partition 0 at offset 0 (snapshot 1, committed " + time.UnixMilli(1000).UTC().Format(time.RFC3339) + "); " +
		"group c partition 0 at offset 3 (snapshot 1, committed " + time.UnixMilli(1000).UTC().Format(time.RFC3339) + "); " +
		"group caught-up partition 0 at offset 5 (snapshot 2, committed " + time.UnixMilli(2000).UTC().Format(time.RFC3339) + ")"
	if got := fx.f.PinnedBy(context.Background(), pinTopic); got != want {
		t.Fatalf("pinned by:\n got %s\nwant %s", got, want)
	}
}

func TestConsumerPinsIgnoreLostHistoryAndUnknownPartitions(t *testing.T) {
	fx := newPinFixture(t)
	// Snapshot 1 expires: partition 0's log now starts at a one-row
	// compacted prefix ending at offset 3.
	if err := fx.idx.CompactPrefix(context.Background(), 0, []int64{1, 0}); err != nil {
		t.Fatal(err)
	}
	if ls := fx.idx.LogStart(0); ls != 2 {
		t.Fatalf("log start %d, want 2", ls)
	}
	fx.commit(t, "lost", map[int32]int64{0: 1})   // before the log start
	fx.commit(t, "gone", map[int32]int64{7: 0})   // no such partition
	fx.commit(t, "prefix", map[int32]int64{0: 2}) // in the prefix
	if ms, ok := fx.oldest(t, pinTopic); !ok || ms != 1000 {
		t.Fatalf("oldest needed %d %v, want the prefix snapshot's 1000", ms, ok)
	}
	got := fx.f.PinnedBy(context.Background(), pinTopic)
	if !strings.HasPrefix(got, "group prefix partition 0 at offset 2 (snapshot 1,") || strings.Contains(got, "lost") || strings.Contains(got, "gone") {
		t.Fatalf("pinned by %q", got)
	}
}

func TestPinnedByShowsEachGroupOnceAndBounded(t *testing.T) {
	fx := newPinFixture(t)
	for _, g := range []string{"g1", "g2", "g3", "g4", "g5", "g6", "g7"} {
		fx.commit(t, g, map[int32]int64{0: 0, 1: 0})
	}
	got := fx.f.PinnedBy(context.Background(), pinTopic)
	if n := strings.Count(got, "group "); n != maxPinsShown {
		t.Fatalf("%d groups shown, want %d: %s", n, maxPinsShown, got)
	}
	if !strings.HasSuffix(got, "; and 2 more groups") {
		t.Fatalf("pinned by %q does not count the groups left out", got)
	}
}
