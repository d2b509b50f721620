package topics

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/lake"
	"github.com/lakegw/lakegw/offsets"
)

// A fetch that located a segment just before an expiry dropped it from the
// index still reads it (from the table state it was indexed from), and once
// no published state holds it, fails with ErrSegmentGone, which the reader
// answers by locating its offset again, never with a storage error.
func TestSegmentDroppedByExpiryReadsOrIsGone(t *testing.T) {
	dir := t.TempDir()
	f := startRegistry(t, dir)
	ctx := context.Background()
	ident := threeSnapshots(t, f, "x")
	tp, _ := f.reg.Topic("ns.x")
	seg, ok := tp.Index.Locate(0, 0)
	if !ok || seg.Kind != offsets.KindChanges || seg.Count != 3 {
		t.Fatalf("offset 0: %+v %v", seg, ok)
	}

	// Expire the first snapshot, keeping its files: the second becomes
	// the compacted prefix over offsets 0..3.
	expireAllButLast2(t, f.cat, ident, table.WithPostCommit(false))
	// The index drops the snapshot first; the table state that expired
	// it is published after.
	waitFor(t, "the compacted prefix and the new table state", func() bool {
		g, ok := tp.Index.First()
		return ok && g.Kind == offsets.KindCompactedPrefix && tp.Table().Metadata().SnapshotByID(seg.SnapshotID) == nil
	})
	tp.changes.Remove(tp.changesKey(seg.SnapshotID, seg.Kind, tp.Encoding()))
	c, err := tp.Changes(ctx, seg, tp.Encoding())
	if err != nil {
		t.Fatalf("a segment located before the expiry: %v", err)
	}
	if got := c.CountByPartition(); got[0] != 3 {
		t.Fatalf("expired snapshot derives %v records, want 3", got)
	}

	// One more commit: no published state holds the snapshot any more.
	appendIDs(t, f.cat, ident, 6)
	waitFor(t, "6 records", func() bool { return tp.Index.HighWatermark(0) == 6 })
	tp.changes.Remove(tp.changesKey(seg.SnapshotID, seg.Kind, tp.Encoding()))
	if _, err := tp.Changes(ctx, seg, tp.Encoding()); !errors.Is(err, ErrSegmentGone) {
		t.Fatalf("a segment no state holds: %v, want ErrSegmentGone", err)
	}
	// Also when its derivation failed (its files went first) and the
	// failure is still remembered: the reader locates its offset again
	// rather than report the old failure for the backoff.
	tp.failures.failed(tp.changesKey(seg.SnapshotID, seg.Kind, tp.Encoding()), os.ErrNotExist, time.Now())
	if _, err := tp.Changes(ctx, seg, tp.Encoding()); !errors.Is(err, ErrSegmentGone) {
		t.Fatalf("a remembered failure of a segment no state holds: %v, want ErrSegmentGone", err)
	}
}

// The state store is lost after snapshots expired: the rebuilt index
// cannot number the offsets as before, so it starts under an epoch higher
// than any the lost one used (the table's last sequence number), and a
// consumer of the old epoch is told its records are gone.
func TestRebuiltIndexAfterExpiryStartsUnderAFreshEpoch(t *testing.T) {
	dir := t.TempDir()
	f := startRegistry(t, dir)
	ident := threeSnapshots(t, f, "lost")
	expireAllButLast2(t, f.cat, ident)
	tp, _ := f.reg.Topic("ns.lost")
	waitFor(t, "the compacted prefix", func() bool { g, ok := tp.Index.First(); return ok && g.Kind == offsets.KindCompactedPrefix })
	oldEpoch := tp.Index.LeaderEpoch()
	f.stop()
	if err := os.Remove(filepath.Join(dir, "state.db")); err != nil {
		t.Fatal(err)
	}

	g := startRegistry(t, dir)
	// Live rows 1-4 at the oldest retained snapshot, then the insert of 5.
	waitFor(t, "the rebuilt index", func() bool { tp, ok := g.reg.Topic("ns.lost"); return ok && tp.Index.HighWatermark(0) == 5 })
	tp, _ = g.reg.Topic("ns.lost")
	if ep, want := tp.Index.LeaderEpoch(), offsets.FreshEpoch(3); ep != want || ep <= oldEpoch {
		t.Fatalf("rebuilt index under epoch %d, want %d (from the table's last sequence number, above the lost %d)", ep, want, oldEpoch)
	}
	// A consumer at offset 5 under the old epoch learns that it ended
	// where the rebuilt log starts.
	if ep, end, ok := tp.Index.EpochEnd(0, oldEpoch); !ok || ep != oldEpoch || end != 0 {
		t.Fatalf("EpochEnd(%d) = %d %d %v, want %d 0 true", oldEpoch, ep, end, ok, oldEpoch)
	}
}

// A gateway restarted after snapshots expired loads an index naming them:
// the topic is served only once that index was realigned with the table,
// so no fetch can look an expired snapshot up.
func TestRestartAfterExpiryServesTheRealignedIndex(t *testing.T) {
	dir := t.TempDir()
	f := startRegistry(t, dir)
	ident := threeSnapshots(t, f, "away")
	f.stop()
	cat, err := lake.OpenCatalog(context.Background(), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	expireAllButLast2(t, cat, ident)

	g := startRegistry(t, dir)
	// Look without sleeping between looks: the topic must not be seen
	// even briefly before its index is realigned.
	var tp *Topic
	deadline := time.Now().Add(10 * time.Second)
	for ok := false; !ok; tp, ok = g.reg.Topic("ns.away") {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting for the topic")
		}
		runtime.Gosched()
	}
	if s, ok := tp.Index.First(); !ok || s.Kind != offsets.KindCompactedPrefix {
		t.Fatalf("served before its index was realigned: first segment %+v", s)
	}
	if tp.Table().Metadata().SnapshotByID(tp.Index.Snapshots()[0].SnapshotID) == nil {
		t.Fatal("the served table state does not hold the first indexed snapshot")
	}
}

// threeSnapshots creates ns.<name> with snapshots of 3, 1 and 1 inserts and
// waits until they are indexed.
func threeSnapshots(t *testing.T, f *fixture, name string) table.Identifier {
	t.Helper()
	ident := table.Identifier{"ns", name}
	createTable(t, f, ident)
	appendIDs(t, f.cat, ident, 1, 2, 3)
	appendIDs(t, f.cat, ident, 4)
	appendIDs(t, f.cat, ident, 5)
	waitFor(t, "5 records", func() bool { tp, ok := f.reg.Topic("ns." + name); return ok && tp.Index.HighWatermark(0) == 5 })
	return ident
}

// A prefix replaced by a newer one lies below the log start, so its rows
// leave the changes cache at once rather than when idle: a streaming table
// expires every few seconds, and a minute of replaced prefixes was the
// largest growing part of a soak's live heap.
func TestReplacedPrefixLeavesTheChangesCache(t *testing.T) {
	f := startRegistry(t, t.TempDir())
	ident := threeSnapshots(t, f, "roll")
	tp, _ := f.reg.Topic("ns.roll")
	prefix := func() offsets.Snapshot {
		t.Helper()
		var p offsets.Snapshot
		waitFor(t, "a compacted prefix", func() bool {
			s, ok := tp.Index.First()
			p = s
			return ok && s.Kind == offsets.KindCompactedPrefix
		})
		return p
	}
	cached := func(s offsets.Snapshot) bool {
		_, ok := tp.changes.Get(tp.changesKey(s.SnapshotID, offsets.KindCompactedPrefix, tp.Encoding()))
		return ok
	}
	expireAllButLast2(t, f.cat, ident)
	first := prefix()
	if !cached(first) {
		t.Fatal("a new prefix is cached for the consumers at the log start")
	}
	appendIDs(t, f.cat, ident, 6)
	expireAllButLast2(t, f.cat, ident)
	var second offsets.Snapshot
	waitFor(t, "a second compacted prefix", func() bool {
		second = prefix()
		return second.SnapshotID != first.SnapshotID
	})
	// The watcher drops the replaced prefix right after it publishes the
	// new one; without that it would stay until idle for a minute.
	waitFor(t, "the replaced prefix to leave the changes cache", func() bool { return !cached(first) })
	if !cached(second) {
		t.Fatal("the new prefix is not cached")
	}
}
