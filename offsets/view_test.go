package offsets

import (
	"context"
	"testing"
)

// TestViewKeepsOneStateOfTheIndex takes a view, truncates the index under
// a new epoch and appends other snapshots at the same offsets: the view
// still answers the old high watermark, epoch and segments together, and
// the index the new ones (issue 12, row 14).
func TestViewKeepsOneStateOfTheIndex(t *testing.T) {
	ctx := context.Background()
	tp := newTopic(t, 1)
	if err := tp.Append(ctx, []Snapshot{{SnapshotID: 1, Counts: []int64{3}}, {SnapshotID: 2, Counts: []int64{4}}}); err != nil {
		t.Fatal(err)
	}
	v := tp.View(0)
	if err := tp.Truncate(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := tp.Append(ctx, []Snapshot{{SnapshotID: 3, Counts: []int64{10}}}); err != nil {
		t.Fatal(err)
	}
	if hw, e := v.HighWatermark(), v.LeaderEpoch(); hw != 7 || e != 0 {
		t.Errorf("view: high watermark %d epoch %d, want 7 and 0", hw, e)
	}
	if g, ok := v.Locate(5); !ok || g.SnapshotID != 2 {
		t.Errorf("view: Locate(5) = %+v %v, want snapshot 2", g, ok)
	}
	if epoch, end, ok := v.EpochEnd(0); !ok || epoch != 0 || end != 7 {
		t.Errorf("view: EpochEnd(0) = %d %d %v, want 0 7 true", epoch, end, ok)
	}
	now := tp.View(0)
	if hw, e := now.HighWatermark(), now.LeaderEpoch(); hw != 13 || e != 1 {
		t.Errorf("index: high watermark %d epoch %d, want 13 and 1", hw, e)
	}
	if g, ok := now.Locate(5); !ok || g.SnapshotID != 3 {
		t.Errorf("index: Locate(5) = %+v %v, want snapshot 3", g, ok)
	}
}

// TestViewsDuringTruncation takes views while another goroutine truncates
// and appends: every view must agree with itself (each snapshot id is
// appended under one epoch only, so a segment located in a view must carry
// that view's epoch), and -race must see no unsynchronised access.
func TestViewsDuringTruncation(t *testing.T) {
	ctx := context.Background()
	tp := newTopic(t, 1)
	if err := tp.Append(ctx, []Snapshot{{SnapshotID: 1, Counts: []int64{5}}}); err != nil {
		t.Fatal(err)
	}
	stop := whileRunning(func() bool {
		v := tp.View(0)
		for off := v.LogStart(); off < v.HighWatermark(); off++ {
			g, ok := v.Locate(off)
			if !ok {
				t.Errorf("view: offset %d below its high watermark %d not located", off, v.HighWatermark())
				return false
			}
			if g.Kind == KindChanges && g.SnapshotID > 1 && g.Epoch != v.LeaderEpoch() {
				t.Errorf("view of epoch %d located snapshot %d of epoch %d", v.LeaderEpoch(), g.SnapshotID, g.Epoch)
				return false
			}
		}
		return true
	})
	defer stop()
	for i := int64(2); i < 60; i++ {
		if err := tp.Truncate(ctx, 1); err != nil {
			t.Fatal(err)
		}
		if err := tp.Append(ctx, []Snapshot{{SnapshotID: i, Counts: []int64{3}}, {SnapshotID: 1000 + i, Counts: []int64{2}}}); err != nil {
			t.Fatal(err)
		}
	}
}
