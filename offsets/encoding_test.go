package offsets

import (
	"context"
	"testing"
)

// A changed encoding keeps every offset and segment but starts a new
// leader epoch at the log start, so that consumers of the old encoding
// see a truncation (issue 12, row 7); the same encoding again, or the
// first one an index is told of, starts none. It survives a restart.
func TestChangedEncodingStartsAnEpochAtTheLogStart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	store := openStore(t, dir)
	tp, err := Open(ctx, store, "ns.t", "uuid-1", 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := tp.Append(ctx, []Snapshot{{SnapshotID: 1, Counts: []int64{4}}, {SnapshotID: 2, Counts: []int64{3}}}); err != nil {
		t.Fatal(err)
	}
	if err := tp.CompactPrefix(ctx, 0, []int64{2}); err != nil { // log start 2, epoch 1
		t.Fatal(err)
	}
	set := func(enc string, want bool) {
		t.Helper()
		raised, err := tp.SetEncoding(ctx, enc, true)
		if err != nil || raised != want {
			t.Fatalf("SetEncoding(%q) = %v %v, want %v", enc, raised, err, want)
		}
	}
	set("format=debezium-json", false)
	set("format=debezium-json", false)
	if e := tp.LeaderEpoch(); e != 1 {
		t.Fatalf("epoch %d before the change, want 1", e)
	}
	set("format=upsert", true)
	if e, hw, start := tp.LeaderEpoch(), tp.HighWatermark(0), tp.LogStart(0); e != 2 || hw != 7 || start != 2 {
		t.Fatalf("after the change: epoch %d high watermark %d log start %d, want 2 7 2", e, hw, start)
	}
	if g, ok := tp.Locate(0, 5); !ok || g.SnapshotID != 2 {
		t.Fatalf("Locate(5) = %+v %v, want snapshot 2 still", g, ok)
	}
	// A consumer of epoch 1 (or 0) at offset 5 read the old encoding: its
	// epoch ends at the log start.
	for _, old := range []int32{0, 1} {
		if epoch, end, ok := tp.EpochEnd(0, old); !ok || end != 2 {
			t.Errorf("EpochEnd(%d) = %d %d %v, want the end at 2", old, epoch, end, ok)
		}
	}
	again := reopen(t, store, dir, "ns.t", "uuid-1", 1)
	if e, enc := again.LeaderEpoch(), again.Encoding(); e != 2 || enc != "format=upsert" {
		t.Fatalf("after a restart: epoch %d encoding %q, want 2 format=upsert", e, enc)
	}
	if raised, err := again.SetEncoding(ctx, "format=upsert", true); err != nil || raised {
		t.Fatalf("the same encoding after a restart: raised %v, %v", raised, err)
	}
}
