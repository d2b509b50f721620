package topics

import (
	"context"
	"errors"
	"testing"

	"github.com/apache/iceberg-go/table"

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
	ident := table.Identifier{"ns", "x"}
	createTable(t, f, ident)
	appendIDs(t, f.cat, ident, 1, 2, 3)
	appendIDs(t, f.cat, ident, 4)
	appendIDs(t, f.cat, ident, 5)
	waitFor(t, "5 records", func() bool { tp, ok := f.reg.Topic("ns.x"); return ok && tp.Index.HighWatermark(0) == 5 })
	tp, _ := f.reg.Topic("ns.x")
	seg, ok := tp.Index.Locate(0, 0)
	if !ok || seg.Kind != offsets.KindChanges || seg.Count != 3 {
		t.Fatalf("offset 0: %+v %v", seg, ok)
	}

	// Expire the first snapshot, keeping its files: the second becomes
	// the compacted prefix over offsets 0..3.
	tbl, err := f.cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.ExpireSnapshots(table.WithRetainLast(2), table.WithOlderThan(0), table.WithPostCommit(false)); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	// The index drops the snapshot first; the table state that expired
	// it is published after.
	waitFor(t, "the compacted prefix and the new table state", func() bool {
		g, ok := tp.Index.First()
		return ok && g.Kind == offsets.KindCompactedPrefix && tp.Table().Metadata().SnapshotByID(seg.SnapshotID) == nil
	})
	tp.changes.Remove(changesKey{tp.Name, seg.SnapshotID, seg.Kind})
	c, err := tp.Changes(ctx, seg)
	if err != nil {
		t.Fatalf("a segment located before the expiry: %v", err)
	}
	if got := c.CountByPartition(); got[0] != 3 {
		t.Fatalf("expired snapshot derives %v records, want 3", got)
	}

	// One more commit: no published state holds the snapshot any more.
	appendIDs(t, f.cat, ident, 6)
	waitFor(t, "6 records", func() bool { return tp.Index.HighWatermark(0) == 6 })
	tp.changes.Remove(changesKey{tp.Name, seg.SnapshotID, seg.Kind})
	if _, err := tp.Changes(ctx, seg); !errors.Is(err, ErrSegmentGone) {
		t.Fatalf("a segment no state holds: %v, want ErrSegmentGone", err)
	}
}
