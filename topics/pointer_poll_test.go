package topics

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/lake"
)

// countingCatalog counts LoadTable calls: each reads and parses the whole
// metadata JSON.
type countingCatalog struct {
	catalog.Catalog
	loads atomic.Int64
}

func (c *countingCatalog) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	c.loads.Add(1)
	return c.Catalog.LoadTable(ctx, ident)
}

// Idle polls of a SQL catalog table read its metadata pointer and load
// nothing; a commit by another writer of the catalog is seen, with exactly
// one load.
func TestIdlePollsLoadNothing(t *testing.T) {
	dir := t.TempDir()
	var cc *countingCatalog
	f := startRegistrySetUp(t, dir, func(c catalog.Catalog) catalog.Catalog {
		cc = &countingCatalog{Catalog: c}
		return cc
	}, func(r *Registry, c catalog.Catalog) {
		// The watchers poll the pointers of the catalog behind the counter.
		r.pointerCat = c
	})
	ident := table.Identifier{"ns", "idle"}
	createTable(t, f, ident)
	appendIDs(t, f.cat, ident, 1, 2)
	waitFor(t, "2 records", func() bool { tp, ok := f.reg.Topic("ns.idle"); return ok && tp.Index.HighWatermark(0) == 2 })
	if f.reg.pointers == nil {
		t.Fatal("the embedded SQL catalog offers no metadata pointers")
	}
	tp, _ := f.reg.Topic("ns.idle")

	reads, loads := f.reg.pointers.Reads(), cc.loads.Load()
	waitFor(t, "20 idle polls", func() bool { return f.reg.pointers.Reads() >= reads+20 })
	if n := cc.loads.Load() - loads; n != 0 {
		t.Fatalf("20 idle polls loaded the table %d times, want 0", n)
	}

	// Another writer of the same catalog database commits.
	other, err := lake.OpenCatalog(context.Background(), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	appendIDs(t, other, ident, 3)
	waitFor(t, "the other writer's commit", func() bool { return tp.Index.HighWatermark(0) == 3 })
	reads = f.reg.pointers.Reads()
	waitFor(t, "20 more idle polls", func() bool { return f.reg.pointers.Reads() >= reads+20 })
	if n := cc.loads.Load() - loads; n != 1 {
		t.Fatalf("one commit and 40 idle polls loaded the table %d times, want 1", n)
	}
}

// Following a table of the SQL catalog decodes each snapshot of its
// metadata files once, not every retained snapshot at every commit: the
// cost of a commit does not grow with the table's retained history.
func TestFollowingATableDecodesEachSnapshotOnce(t *testing.T) {
	f := startRegistry(t, t.TempDir())
	ident := table.Identifier{"ns", "follow"}
	createTable(t, f, ident)
	const commits = 25
	for i := int64(1); i <= commits; i++ {
		appendIDs(t, f.cat, ident, i)
		waitFor(t, "the commit", func() bool {
			tp, ok := f.reg.Topic("ns.follow")
			return ok && tp.Index.HighWatermark(0) == i
		})
	}
	f.reg.mu.Lock()
	w := f.reg.watchers["ns.follow"]
	f.reg.mu.Unlock()
	if n := w.meta.Decoded(); n != commits {
		t.Fatalf("following %d commits decoded %d snapshots, want each once", commits, n)
	}
}
