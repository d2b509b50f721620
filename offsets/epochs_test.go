package offsets

import (
	"context"
	"testing"
)

// consumer is a Kafka client's position: the next offset and the epoch of
// the last record it consumed (the epoch of that record's batch).
type consumer struct {
	name      string
	position  int64
	lastEpoch int32
}

// validate is what a Kafka client does with OffsetForLeaderEpoch (KIP-320):
// when the epoch of its last record ended before its position, it
// truncates to that end; otherwise it keeps its position.
func validate(t *testing.T, tp *Index, c consumer) (truncatedTo int64, truncated bool) {
	t.Helper()
	_, end, ok := tp.EpochEnd(0, c.lastEpoch)
	if !ok {
		t.Fatalf("%s: epoch %d unknown to a topic whose leader epoch is %d", c.name, c.lastEpoch, tp.LeaderEpoch())
	}
	return end, end < c.position
}

// TestExpiryTruncatesOnlyConsumersOfReplacedRecords: snapshots 1..5 (4
// records each, offsets 0..19); the first three expire and the live rows
// of the third (3) become a compacted prefix over 9..11. A consumer whose
// last record was replaced truncates to the prefix's base; one whose last
// record is still served at its offset keeps its position. Every client is
// fenced once (its current epoch is older than the rewrite) so that it
// validates; later snapshots fence no one.
func TestExpiryTruncatesOnlyConsumersOfReplacedRecords(t *testing.T) {
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
	for o := int64(4); o < 20; o += 4 {
		if epochOf(o) <= epochOf(o-4) {
			t.Fatalf("snapshot at %d has epoch %d, not above the one before (%d)", o, epochOf(o), epochOf(o-4))
		}
	}
	metadataEpoch := tp.LeaderEpoch() // what every client last saw
	consumers := []consumer{
		{"in the first snapshot", 2, epochOf(0)},
		{"in the replaced third snapshot", 10, epochOf(8)},
		{"at the end of the replaced snapshots", 12, epochOf(8)},
		{"in the fourth snapshot", 14, epochOf(12)},
		{"at the head", 20, epochOf(16)},
	}
	if err := tp.CompactPrefix(ctx, 2, []int64{3}); err != nil {
		t.Fatal(err)
	}
	if start := tp.LogStart(0); start != 9 {
		t.Fatalf("log start %d, want 9", start)
	}
	prefix, _ := tp.Locate(0, 9)
	if prefix.Epoch != PrefixEpoch(3) || prefix.Epoch >= epochOf(12) {
		t.Fatalf("prefix epoch %d, want %d, below the fourth snapshot's %d", prefix.Epoch, PrefixEpoch(3), epochOf(12))
	}
	if tp.FenceEpoch() <= metadataEpoch {
		t.Fatalf("fence epoch %d: a client that last saw epoch %d would not be fenced to validate", tp.FenceEpoch(), metadataEpoch)
	}
	wantTruncated := map[string]bool{"in the first snapshot": false, // below the log start: out of range, reset
		"in the replaced third snapshot": true, "at the end of the replaced snapshots": true,
		"in the fourth snapshot": false, "at the head": false}
	for _, c := range consumers {
		to, truncated := validate(t, tp, c)
		if truncated != wantTruncated[c.name] {
			t.Errorf("consumer %s (at %d, epoch %d): truncated %v to %d, want %v", c.name, c.position, c.lastEpoch, truncated, to, wantTruncated[c.name])
		}
		if truncated && to != 9 {
			t.Errorf("consumer %s truncated to %d, want the prefix's base 9", c.name, to)
		}
	}
	// A consumer that read the prefix from its start and reads on.
	if _, truncated := validate(t, tp, consumer{"in the prefix", 11, prefix.Epoch}); truncated {
		t.Errorf("a consumer reading the prefix was truncated")
	}

	// A new snapshot raises the leader epoch without fencing anyone.
	fence := tp.FenceEpoch()
	if err := tp.Append(ctx, []Snapshot{{SnapshotID: 6, SequenceNumber: 6, Counts: []int64{4}}}); err != nil {
		t.Fatal(err)
	}
	if tp.FenceEpoch() != fence || tp.LeaderEpoch() <= fence || epochOf(20) != tp.LeaderEpoch() {
		t.Fatalf("after a snapshot: fence %d (was %d), leader %d, its epoch %d", tp.FenceEpoch(), fence, tp.LeaderEpoch(), epochOf(20))
	}

	// The same answers from the index reloaded from its store.
	again, err := Open(ctx, tp.store, "ns.t", "uuid-1", 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range consumers {
		if _, e1, _ := tp.EpochEnd(0, c.lastEpoch); true {
			if _, e2, _ := again.EpochEnd(0, c.lastEpoch); e1 != e2 {
				t.Errorf("reloaded index ends epoch %d at %d, was %d", c.lastEpoch, e2, e1)
			}
		}
	}
	if again.LeaderEpoch() != tp.LeaderEpoch() || again.FenceEpoch() != tp.FenceEpoch() {
		t.Errorf("reloaded epochs %d/%d, want %d/%d", again.LeaderEpoch(), again.FenceEpoch(), tp.LeaderEpoch(), tp.FenceEpoch())
	}
}

// TestExpiryWithoutRoomBetweenEpochs: an index written before epochs were
// per snapshot (every segment under one epoch) has no epoch between the
// replaced snapshots and the kept ones. The prefix and everything after it
// take a new epoch, and every consumer past the prefix's base reads it
// again: never a silent skip.
func TestExpiryWithoutRoomBetweenEpochs(t *testing.T) {
	ctx := context.Background()
	tp := newTopic(t, 1)
	// Sequence number 0 (as before epochs followed them): one epoch.
	if err := tp.Append(ctx, []Snapshot{{SnapshotID: 1, Counts: []int64{4}}, {SnapshotID: 2, Counts: []int64{4}}, {SnapshotID: 3, Counts: []int64{4}}}); err != nil {
		t.Fatal(err)
	}
	old, _ := tp.Locate(0, 11)
	if err := tp.CompactPrefix(ctx, 1, []int64{2}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []consumer{{"inside", 7, old.Epoch}, {"past", 12, old.Epoch}} {
		to, truncated := validate(t, tp, c)
		if !truncated || to != 6 {
			t.Errorf("consumer %s: truncated %v to %d, want to the prefix's base 6", c.name, truncated, to)
		}
	}
	kept, _ := tp.Locate(0, 8)
	prefix, _ := tp.Locate(0, 6)
	if kept.Epoch < prefix.Epoch {
		t.Fatalf("kept snapshot under epoch %d, below its prefix's %d: epochs must rise with the offset", kept.Epoch, prefix.Epoch)
	}
}

// TestEncodingChangeRereadsEveryRecord: a new encoding serves every record
// anew under one epoch; any consumer that read under an older one
// truncates to the log start.
func TestEncodingChangeRereadsEveryRecord(t *testing.T) {
	ctx := context.Background()
	tp := newTopic(t, 1)
	if _, err := tp.SetEncoding(ctx, "a", true); err != nil {
		t.Fatal(err)
	}
	for seq := int64(1); seq <= 3; seq++ {
		if err := tp.Append(ctx, []Snapshot{{SnapshotID: seq, SequenceNumber: seq, Counts: []int64{2}}}); err != nil {
			t.Fatal(err)
		}
	}
	last, _ := tp.Locate(0, 5)
	raised, err := tp.SetEncoding(ctx, "b", true)
	if err != nil || !raised {
		t.Fatalf("SetEncoding: raised %v, %v", raised, err)
	}
	if to, truncated := validate(t, tp, consumer{"at the head", 6, last.Epoch}); !truncated || to != 0 {
		t.Fatalf("a consumer at the head under the old encoding: truncated %v to %d, want to 0", truncated, to)
	}
	for o := int64(0); o < 6; o++ {
		if g, _ := tp.Locate(0, o); g.Epoch != tp.FenceEpoch() {
			t.Fatalf("offset %d under epoch %d, want the new encoding's %d", o, g.Epoch, tp.FenceEpoch())
		}
	}
}

// TestReencodingKeepsEveryPosition: records written in a new schema are
// the same events at the same offsets: the new epoch starts at the log
// end, every consumer (fenced once) validates its position and reads on
// from it, older batches keep their epochs, and the next snapshot's epoch
// is above the new one. It survives a restart.
func TestReencodingKeepsEveryPosition(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store := openStore(t, dir)
	tp, err := Open(ctx, store, "ns.t", "uuid-1", 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tp.SetEncoding(ctx, "schema=0", false); err != nil {
		t.Fatal(err)
	}
	for seq := int64(1); seq <= 3; seq++ {
		if err := tp.Append(ctx, []Snapshot{{SnapshotID: seq, SequenceNumber: seq, Counts: []int64{2}}}); err != nil {
			t.Fatal(err)
		}
	}
	before := tp.LeaderEpoch()
	epochs := make([]int32, 6)
	for o := range epochs {
		g, _ := tp.Locate(0, int64(o))
		epochs[o] = g.Epoch
	}
	raised, err := tp.SetEncoding(ctx, "schema=1", false)
	if err != nil || !raised {
		t.Fatalf("SetEncoding: raised %v, %v", raised, err)
	}
	if e, fence := tp.LeaderEpoch(), tp.FenceEpoch(); e <= before || fence != e {
		t.Fatalf("leader epoch %d, fence %d after the change, want one above %d fencing older clients", e, fence, before)
	}
	for _, c := range []consumer{{"at the head", 6, epochs[5]}, {"mid-way", 3, epochs[2]}, {"at the start", 1, epochs[0]}} {
		if to, truncated := validate(t, tp, c); truncated {
			t.Errorf("a consumer %s was truncated to %d: a re-encoding moves no position", c.name, to)
		}
	}
	for o := range epochs {
		if g, _ := tp.Locate(0, int64(o)); g.Epoch != epochs[o] {
			t.Errorf("offset %d now under epoch %d, was %d", o, g.Epoch, epochs[o])
		}
	}
	if err := tp.Append(ctx, []Snapshot{{SnapshotID: 4, SequenceNumber: 4, Counts: []int64{1}}}); err != nil {
		t.Fatal(err)
	}
	if g, _ := tp.Locate(0, 6); g.Epoch <= tp.FenceEpoch() {
		t.Errorf("the next snapshot under epoch %d, not above the re-encoding's %d", g.Epoch, tp.FenceEpoch())
	}
	again := reopen(t, store, dir, "ns.t", "uuid-1", 1)
	if again.Encoding() != "schema=1" || again.FenceEpoch() != tp.FenceEpoch() {
		t.Fatalf("after a restart: encoding %q fence %d, want schema=1 and %d", again.Encoding(), again.FenceEpoch(), tp.FenceEpoch())
	}
	last, _ := again.Locate(0, 6)
	if to, truncated := validate(t, again, consumer{"at the head after a restart", 7, last.Epoch}); truncated {
		t.Errorf("after a restart a consumer at the head was truncated to %d", to)
	}
}

// A table that determines its epochs (a lakegw LSM table) gets the same
// prefix epoch and no fence: its leader epoch stays its newest snapshot's,
// as on a gateway that rebuilt the index from the table after the prefix.
func TestDeterminedPrefixKeepsTheLeaderEpoch(t *testing.T) {
	ctx := context.Background()
	live, rebuilt := newTopic(t, 1), newTopic(t, 1)
	for seq := int64(1); seq <= 5; seq++ {
		if err := live.Append(ctx, []Snapshot{{SnapshotID: seq, SequenceNumber: seq, Counts: []int64{4}}}); err != nil {
			t.Fatal(err)
		}
	}
	before := live.LeaderEpoch()
	if err := live.CompactPrefixUnder(ctx, 2, []int64{3}, PrefixEpoch(3)); err != nil {
		t.Fatal(err)
	}
	if got := live.LeaderEpoch(); got != before {
		t.Fatalf("leader epoch %d after a determined prefix, want %d (the newest snapshot's)", got, before)
	}
	// Rebuilt: the prefix first, then the snapshots after it.
	if err := rebuilt.StartAt(ctx, []int64{9}); err != nil {
		t.Fatal(err)
	}
	snaps := []Snapshot{{Kind: KindCompactedPrefix, SnapshotID: 3, SequenceNumber: 3, Counts: []int64{3}},
		{SnapshotID: 4, SequenceNumber: 4, Counts: []int64{4}}, {SnapshotID: 5, SequenceNumber: 5, Counts: []int64{4}}}
	if err := rebuilt.Append(ctx, snaps); err != nil {
		t.Fatal(err)
	}
	if live.LeaderEpoch() != rebuilt.LeaderEpoch() {
		t.Fatalf("leader epoch %d on the gateway that saw the expiry, %d on one that rebuilt the index", live.LeaderEpoch(), rebuilt.LeaderEpoch())
	}
	for o := int64(9); o < 20; o++ {
		a, _ := live.Locate(0, o)
		b, _ := rebuilt.Locate(0, o)
		if a.Epoch != b.Epoch || a.BaseOffset != b.BaseOffset {
			t.Fatalf("offset %d: segment at %d epoch %d, rebuilt at %d epoch %d", o, a.BaseOffset, a.Epoch, b.BaseOffset, b.Epoch)
		}
	}
}
