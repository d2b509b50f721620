package quickstart

import (
	"context"
	"testing"
)

func TestRestartRecoversLiveRowsAndPositions(t *testing.T) {
	cat, _ := openTestCatalog(t)
	before := newTestDemo(t, cat, 42)
	steps(t, before, 5)

	// A new demo on the existing table, as after a process restart.
	after := newTestDemo(t, cat, 42)
	if _, err := after.Ensure(context.Background()); err != nil {
		t.Fatalf("ensure existing table: %v", err)
	}
	// Positions matter as much as values: a wrong one would make the next
	// update delete some other order.
	if len(after.model.rows) != len(before.model.rows) {
		t.Fatalf("recovered %d live rows, want %d", len(after.model.rows), len(before.model.rows))
	}
	for id, want := range before.model.rows {
		got := after.model.rows[id]
		if got.loc != want.loc || !got.order.Equal(want.order) {
			t.Errorf("order %d recovered as %+v, want %+v", id, got, want)
		}
	}
	if after.model.nextID != before.model.nextID {
		t.Errorf("recovered next order_id %d, want %d (ids of deleted orders must not be reused)",
			after.model.nextID, before.model.nextID)
	}
	if after.model.snapshotID != before.model.snapshotID {
		t.Errorf("recovered at snapshot %d, want %d", after.model.snapshotID, before.model.snapshotID)
	}

	for i := range 4 {
		steps(t, after, 1)
		requireTableMatchesModel(t, after)
		if t.Failed() {
			t.Fatalf("table diverged from the model after step %d past the restart", i+1)
		}
	}
}
