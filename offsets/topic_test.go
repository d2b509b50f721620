package offsets

import (
	"context"
	"testing"
)

// newTopic opens the empty index of topic ns.t on a fresh store, both
// closed when the test ends.
func newTopic(t *testing.T, partitions int32) *Index {
	t.Helper()
	store := openStore(t, t.TempDir())
	t.Cleanup(func() { store.Close() })
	tp, err := Open(context.Background(), store, "ns.t", "uuid-1", partitions)
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

// reopen closes store, as a stopping gateway does, and opens the index of
// table again from a new store on dir (closed when the test ends).
func reopen(t *testing.T, store *memStore, dir, table, uuid string, partitions int32) *Index {
	t.Helper()
	store.Close()
	store = openStore(t, dir)
	t.Cleanup(func() { store.Close() })
	tp, err := Open(context.Background(), store, table, uuid, partitions)
	if err != nil {
		t.Fatal(err)
	}
	return tp
}

func TestIndexDenseAndPersistent(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store := openStore(t, dir)
	tp, err := Open(ctx, store, "ns.t", "uuid-1", 2)
	if err != nil {
		t.Fatal(err)
	}
	snaps := []Snapshot{
		{SnapshotID: 11, SequenceNumber: 1, TimestampMs: 1000, Counts: []int64{3, 0}},
		{SnapshotID: 12, SequenceNumber: 2, TimestampMs: 2000, Counts: []int64{0, 0}},
		{SnapshotID: 13, SequenceNumber: 3, TimestampMs: 3000, Counts: []int64{2, 5}},
	}
	if err := tp.Append(ctx, snaps[:1]); err != nil {
		t.Fatal(err)
	}
	if err := tp.Append(ctx, snaps[1:]); err != nil {
		t.Fatal(err)
	}
	check := func(tp *Index) {
		t.Helper()
		if hw := tp.HighWatermark(0); hw != 5 {
			t.Errorf("hwm p0 = %d, want 5", hw)
		}
		if hw := tp.HighWatermark(1); hw != 5 {
			t.Errorf("hwm p1 = %d, want 5", hw)
		}
		for off, want := range map[int64]int64{0: 11, 2: 11, 3: 13, 4: 13} {
			g, ok := tp.Locate(0, off)
			if !ok || g.SnapshotID != want {
				t.Errorf("Locate(0,%d) = %+v %v, want snapshot %d", off, g, ok, want)
			}
		}
		if _, ok := tp.Locate(0, 5); ok {
			t.Errorf("Locate at the high watermark must fail")
		}
		// Snapshot 12 has no records: a time lookup at its commit time lands
		// on the next record, which belongs to snapshot 13.
		if off, ts, ok := tp.OffsetForTime(0, 1500); !ok || off != 3 || ts != 2000 {
			t.Errorf("OffsetForTime(0,1500) = %d %d %v, want 3 2000 true", off, ts, ok)
		}
		if off, _, ok := tp.OffsetForTime(1, 2500); !ok || off != 0 {
			t.Errorf("OffsetForTime(1,2500) = %d %v, want 0 true", off, ok)
		}
		if _, _, ok := tp.OffsetForTime(0, 3001); ok {
			t.Errorf("OffsetForTime after the last snapshot must not be found")
		}
	}
	check(tp)
	again := reopen(t, store, dir, "ns.t", "uuid-1", 2)
	check(again)
	if got := len(again.Snapshots()); got != 3 {
		t.Fatalf("reopened index has %d snapshots, want 3", got)
	}
}

func TestTruncateBumpsEpoch(t *testing.T) {
	ctx := context.Background()
	store := openStore(t, t.TempDir())
	defer store.Close()
	tp, err := Open(ctx, store, "ns.t", "u", 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := tp.Append(ctx, []Snapshot{{SnapshotID: 1, Counts: []int64{4}}, {SnapshotID: 2, Counts: []int64{6}}}); err != nil {
		t.Fatal(err)
	}
	if err := tp.Truncate(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if e := tp.LeaderEpoch(); e != 1 {
		t.Fatalf("epoch after truncate = %d, want 1", e)
	}
	if err := tp.Append(ctx, []Snapshot{{SnapshotID: 3, Counts: []int64{2}}}); err != nil {
		t.Fatal(err)
	}
	if ep, end, ok := tp.EpochEnd(0, 0); !ok || ep != 0 || end != 4 {
		t.Errorf("EpochEnd(0) = %d %d %v, want 0 4 true", ep, end, ok)
	}
	if ep, end, ok := tp.EpochEnd(0, 1); !ok || ep != 1 || end != 6 {
		t.Errorf("EpochEnd(1) = %d %d %v, want 1 6 true", ep, end, ok)
	}
	if _, _, ok := tp.EpochEnd(0, 2); ok {
		t.Errorf("EpochEnd of a future epoch must fail")
	}
	// A different table under the same name starts over under a new epoch.
	other, err := Open(ctx, store, "ns.t", "u2", 1)
	if err != nil {
		t.Fatal(err)
	}
	if other.HighWatermark(0) != 0 || other.LeaderEpoch() != 2 {
		t.Errorf("replaced table: hwm %d epoch %d, want 0 2", other.HighWatermark(0), other.LeaderEpoch())
	}
}

func TestCompactPrefixKeepsLaterOffsets(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store := openStore(t, dir)
	tp, err := Open(ctx, store, "ns.t", "u", 1)
	if err != nil {
		t.Fatal(err)
	}
	// 10 inserts, then 4 updates and 2 deletes (6 events), then 3 inserts.
	snaps := []Snapshot{
		{SnapshotID: 1, TimestampMs: 10, Counts: []int64{10}},
		{SnapshotID: 2, TimestampMs: 20, Counts: []int64{6}},
		{SnapshotID: 3, TimestampMs: 30, Counts: []int64{3}},
	}
	if err := tp.Append(ctx, snaps); err != nil {
		t.Fatal(err)
	}
	// Snapshot 1 expired: snapshot 2's 8 live rows replace offsets 0..15.
	if err := tp.CompactPrefix(ctx, 1, []int64{8}); err != nil {
		t.Fatal(err)
	}
	check := func(tp *Index) {
		t.Helper()
		if ls, hw := tp.LogStart(0), tp.HighWatermark(0); ls != 8 || hw != 19 {
			t.Fatalf("log start %d hwm %d, want 8 19", ls, hw)
		}
		g, ok := tp.Locate(0, 8)
		if !ok || g.Kind != KindCompactedPrefix || g.SnapshotID != 2 || g.Count != 8 {
			t.Fatalf("offset 8: %+v %v", g, ok)
		}
		if g, ok := tp.Locate(0, 16); !ok || g.Kind != KindChanges || g.SnapshotID != 3 || g.BaseOffset != 16 {
			t.Fatalf("offset 16 keeps naming snapshot 3: %+v %v", g, ok)
		}
		if _, ok := tp.Locate(0, 7); ok {
			t.Fatal("offsets before the log start must not resolve")
		}
		// Epoch 0 ends at the prefix's base: a consumer inside the prefix
		// (offset 12) or past it (17) learns through OffsetForLeaderEpoch
		// that its records there are gone, and rereads from 8.
		if ep, end, ok := tp.EpochEnd(0, 0); !ok || ep != 0 || end != 8 {
			t.Fatalf("EpochEnd(0) = %d %d %v, want 0 8", ep, end, ok)
		}
		if ep, end, ok := tp.EpochEnd(0, 1); !ok || ep != 1 || end != 19 {
			t.Fatalf("EpochEnd(1) = %d %d %v, want 1 19", ep, end, ok)
		}
		if tp.LeaderEpoch() != 1 {
			t.Fatalf("epoch %d, want 1", tp.LeaderEpoch())
		}
	}
	check(tp)
	again := reopen(t, store, dir, "ns.t", "u", 1)
	check(again)
	if err := again.CompactPrefix(ctx, 0, []int64{17}); err == nil {
		t.Fatal("a prefix larger than the history it replaces must be refused")
	}
}

// Two rollbacks, the second to before the first: epoch 0 must end where its
// records stopped being served, not where epoch 1 once started.
func TestEpochsAfterRepeatedTruncation(t *testing.T) {
	ctx := context.Background()
	store := openStore(t, t.TempDir())
	defer store.Close()
	tp, err := Open(ctx, store, "ns.t", "u", 1)
	if err != nil {
		t.Fatal(err)
	}
	add := func(id, n int64) {
		t.Helper()
		if err := tp.Append(ctx, []Snapshot{{SnapshotID: id, Counts: []int64{n}}}); err != nil {
			t.Fatal(err)
		}
	}
	add(1, 80)
	add(2, 20)                                  // offsets 80..99 under epoch 0
	if err := tp.Truncate(ctx, 2); err != nil { // nothing to drop
		t.Fatal(err)
	}
	add(3, 10) // 100..109
	if err := tp.Truncate(ctx, 2); err != nil {
		t.Fatal(err)
	}
	if ep, end, _ := tp.EpochEnd(0, 0); ep != 0 || end != 100 {
		t.Fatalf("after the first rollback epoch 0 ends at %d (epoch %d), want 100", end, ep)
	}
	add(4, 5)
	if err := tp.Truncate(ctx, 1); err != nil { // back to offset 80
		t.Fatal(err)
	}
	if ep, end, _ := tp.EpochEnd(0, 0); ep != 0 || end != 80 {
		t.Fatalf("after the second rollback epoch 0 ends at %d (epoch %d), want 80", end, ep)
	}
	if ep, end, ok := tp.EpochEnd(0, 1); !ok || ep != 0 || end != 80 {
		t.Fatalf("epoch 1 was truncated away: want the answer of epoch 0 (0, 80), got %d %d %v", ep, end, ok)
	}
	if ep, _, _ := tp.EpochEnd(0, tp.LeaderEpoch()); ep != 2 {
		t.Fatalf("current epoch %d", ep)
	}
}

// A compacted prefix keeps the epoch it was written under, even once a
// rollback moved the leader epoch on and dropped that epoch from the epoch
// list.
func TestPrefixKeepsTheEpochItWasWrittenUnder(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store := openStore(t, dir)
	tp, err := Open(ctx, store, "ns.t", "u", 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := tp.Append(ctx, []Snapshot{{SnapshotID: 1, Counts: []int64{10}}, {SnapshotID: 2, Counts: []int64{6}}}); err != nil {
		t.Fatal(err)
	}
	if err := tp.CompactPrefix(ctx, 1, []int64{8}); err != nil { // epoch 1, prefix 8..15
		t.Fatal(err)
	}
	if err := tp.Append(ctx, []Snapshot{{SnapshotID: 3, Counts: []int64{3}}}); err != nil {
		t.Fatal(err)
	}
	if err := tp.Truncate(ctx, 1); err != nil { // epoch 2 from 16
		t.Fatal(err)
	}
	if err := tp.Append(ctx, []Snapshot{{SnapshotID: 4, Counts: []int64{2}}}); err != nil {
		t.Fatal(err)
	}
	check := func(tp *Index) {
		t.Helper()
		if ep := tp.LeaderEpoch(); ep != 2 {
			t.Fatalf("leader epoch %d, want 2", ep)
		}
		if g, ok := tp.Locate(0, 12); !ok || g.Kind != KindCompactedPrefix || g.Epoch != 1 {
			t.Fatalf("prefix at offset 12: %+v %v, want written under epoch 1", g, ok)
		}
		if g, ok := tp.Locate(0, 16); !ok || g.SnapshotID != 4 || g.Epoch != 2 {
			t.Fatalf("offset 16: %+v %v, want snapshot 4 written under epoch 2", g, ok)
		}
	}
	check(tp)
	again := reopen(t, store, dir, "ns.t", "u", 1)
	check(again)

	// Starting over after the old end: the new prefix is the new epoch's.
	if err := again.ResetToPrefix(ctx, Snapshot{SnapshotID: 9, Counts: []int64{5}}); err != nil {
		t.Fatal(err)
	}
	if g, ok := again.Locate(0, 18); !ok || g.Kind != KindCompactedPrefix || g.Epoch != 3 || again.LeaderEpoch() != 3 {
		t.Fatalf("reset prefix at 18: %+v %v, epoch %d; want the prefix under epoch 3", g, ok, again.LeaderEpoch())
	}
}

// Segments stored before they recorded an epoch load under the current
// epoch: an older consumer rereads a prefix rather than trust its offsets.
func TestSegmentsWithoutAnEpochLoadUnderTheCurrentOne(t *testing.T) {
	ctx := context.Background()
	store := openStore(t, t.TempDir())
	defer store.Close()
	st := TopicState{Topic: "ns.t", TableUUID: "u", Partitions: 1,
		Epochs: [][]EpochStart{{{Epoch: 0, StartOffset: 0}, {Epoch: 4, StartOffset: 7}}}}
	segs := []Segment{
		{Kind: KindCompactedPrefix, SnapshotID: 2, BaseOffset: 3, Count: 4, Epoch: -1},
		{SnapshotID: 3, BaseOffset: 7, Count: 2, Epoch: 4},
	}
	if err := store.ReplaceTopic(ctx, st, segs); err != nil {
		t.Fatal(err)
	}
	tp, err := Open(ctx, store, "ns.t", "u", 1)
	if err != nil {
		t.Fatal(err)
	}
	if g, ok := tp.Locate(0, 3); !ok || g.Epoch != 4 {
		t.Fatalf("legacy prefix: %+v %v, want epoch 4", g, ok)
	}
}
