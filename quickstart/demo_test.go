package quickstart

import (
	"context"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
)

func TestStepsMatchScan(t *testing.T) {
	cat, _ := openTestCatalog(t)
	d := newTestDemo(t, cat, 42)
	ctx := context.Background()

	tbl, err := d.Ensure(ctx)
	if err != nil {
		t.Fatalf("ensure: %v", err)
	}
	if v := tbl.Metadata().Version(); v != 2 {
		t.Fatalf("format version %d, want 2", v)
	}
	if ids := tbl.Schema().IdentifierFieldIDs; len(ids) != 1 || ids[0] != 1 {
		t.Fatalf("identifier fields %v, want [1] (order_id)", ids)
	}

	first := steps(t, d, 1)
	if got := len(d.Expected()); got != 20 {
		t.Fatalf("first snapshot holds %d orders, want 20", got)
	}
	requireTableMatchesModel(t, d)
	tbl, err = cat.LoadTable(ctx, DefaultTable())
	if err != nil {
		t.Fatal(err)
	}
	if op := tbl.SnapshotByID(first[0]).Summary.Operation; op != table.OpAppend {
		t.Fatalf("first snapshot operation %q, want append", op)
	}

	for i := range 7 {
		steps(t, d, 1)
		// Checking after every step, not only at the end, catches a delete
		// that hit the wrong row and was later hidden by another change.
		requireTableMatchesModel(t, d)
		if t.Failed() {
			t.Fatalf("table diverged from the model after step %d", i+2)
		}
	}
}

func TestSameSeedSameRows(t *testing.T) {
	run := func() map[int64]Order {
		cat, _ := openTestCatalog(t)
		d := newTestDemo(t, cat, 7)
		steps(t, d, 5)
		return d.Expected()
	}
	requireSameOrders(t, run(), run())
}

func TestRunStopsOnCancel(t *testing.T) {
	cat, _ := openTestCatalog(t)
	d := newTestDemo(t, cat, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx, 5*time.Millisecond) }()

	deadline := time.Now().Add(30 * time.Second)
	for {
		tbl, err := cat.LoadTable(context.Background(), DefaultTable())
		if err == nil && len(tbl.Metadata().Snapshots()) >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("Run committed fewer than 3 snapshots in 30s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run returned %v after cancel, want nil", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
	requireTableMatchesModel(t, d)
}
