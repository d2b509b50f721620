package maintain_test

import (
	"context"
	"errors"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lakegw/lakegw/lake"
	"github.com/lakegw/lakegw/maintain"
	"github.com/lakegw/lakegw/quickstart"
)

// TestCompactionLeaseHoldsADemoWriter compacts the demo table while a demo
// writer on its own catalog handle (as `lakegw maintain` beside a running
// quickstart, or the soak's writer beside the gateway) commits as fast as
// it can. Without the lease every commit of the writer lands during the
// rewrite and the compaction gives up; with it the writer holds its
// commits, the compaction lands, and the writer goes on with the right
// rows.
func TestCompactionLeaseHoldsADemoWriter(t *testing.T) {
	ctx := context.Background()
	cat, warehouse := openCatalog(t)
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	d := quickstart.NewDemo(cat, log, quickstart.DemoOptions{Seed: 5})
	if _, err := d.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	ident := quickstart.DefaultTable()
	for range 40 { // past the compaction thresholds
		if _, err := d.Step(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// The writer's own catalog handle: nothing in process is shared with
	// the pass.
	wcat, err := lake.OpenCatalog(ctx, filepath.Dir(warehouse), nil)
	if err != nil {
		t.Fatal(err)
	}
	w := quickstart.NewDemo(wcat, log, quickstart.DemoOptions{Seed: 5})
	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	var commits atomic.Int64
	var werr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		for wctx.Err() == nil {
			if _, err := w.Step(wctx); err != nil {
				// Once stopped, the SQL catalog may report the cancel
				// as a rolled-back transaction of its own.
				if !errors.Is(err, context.Canceled) && wctx.Err() == nil {
					werr = err
				}
				return
			}
			commits.Add(1)
		}
	}()
	// Let the writer get going: a pass begins amid its commits.
	for commits.Load() < 5 {
		time.Sleep(10 * time.Millisecond)
	}
	rep, err := maintain.Run(ctx, cat, ident, maintain.Options{Log: log, SkipOrphans: true})
	before := commits.Load()
	for commits.Load() < before+5 && werr == nil { // the writer resumes after it
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if werr != nil {
		t.Fatalf("writer: %v", werr)
	}
	t.Log(rep)
	if c := rep.Compaction; c.Skipped != "" || c.SnapshotID == 0 {
		t.Fatalf("compaction beside a full-speed writer: %+v; want it committed", c)
	}
	tbl := loadTable(t, cat, ident)
	if _, held := lake.CompactionLeaseUntil(tbl.Properties(), time.Now()); held {
		t.Fatal("the compaction lease outlived the compaction")
	}
	live, err := w.LiveRows(ctx)
	if err != nil {
		t.Fatal(err)
	}
	requireSameOrders(t, "after the writer resumed", live, w.Expected())
}
