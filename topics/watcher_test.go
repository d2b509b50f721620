package topics

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/state"
)

// flakyCatalog is a catalog whose LoadTable can be made to fail, or to
// block, whatever its context says, until released: a catalog that is
// briefly unreachable, or a watcher stuck in the middle of its work.
type flakyCatalog struct {
	catalog.Catalog

	mu     sync.Mutex
	fail   error         // LoadTable returns it when set
	hold   chan struct{} // when set, the next LoadTable blocks until it is closed
	held   chan struct{} // closed once a LoadTable blocks on hold
	failed atomic.Int64  // LoadTable calls that failed
	// released is set once a blocked LoadTable has returned.
	released atomic.Bool
}

func (c *flakyCatalog) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	c.mu.Lock()
	fail, hold, held := c.fail, c.hold, c.held
	c.hold = nil
	c.mu.Unlock()
	if hold != nil {
		close(held)
		<-hold
		defer c.released.Store(true)
	}
	if fail != nil {
		c.failed.Add(1)
		return nil, fail
	}
	return c.Catalog.LoadTable(ctx, ident)
}

func (c *flakyCatalog) setFail(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.fail = err
}

// holdNext makes the next LoadTable block until release is closed; held is
// closed once it does.
func (c *flakyCatalog) holdNext() (held, release chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hold, c.held = make(chan struct{}), make(chan struct{})
	return c.held, c.hold
}

func startFlaky(t *testing.T, dir string) (*fixture, *flakyCatalog) {
	t.Helper()
	var fc *flakyCatalog
	f := startRegistryWith(t, dir, func(c catalog.Catalog) catalog.Catalog {
		fc = &flakyCatalog{Catalog: c}
		return fc
	})
	return f, fc
}

// A watcher replaced while it is in the middle of its work (here: blocked
// loading the table, deaf to its cancellation) must have returned before
// its successor opens the topic's index: two writers of one index would
// interleave their segments.
func TestReplacedWatcherReturnsBeforeItsSuccessorOpensTheIndex(t *testing.T) {
	f, fc := startFlaky(t, t.TempDir())
	ctx := context.Background()
	ident := table.Identifier{"ns", "w"}
	createTable(t, f, ident)
	tbl := appendIDs(t, f.cat, ident, 1, 2)
	waitFor(t, "2 records", func() bool { tp, ok := f.reg.Topic("ns.w"); return ok && tp.Index.HighWatermark(0) == 2 })

	held, release := fc.holdNext()
	var once sync.Once
	unhold := func() { once.Do(func() { close(release) }) }
	// Runs before the registry's own cleanup, which waits for every
	// watcher: a failed test must not leave one blocked.
	t.Cleanup(unhold)
	select {
	case <-held:
	case <-time.After(10 * time.Second):
		t.Fatal("the watcher never loaded the table again")
	}
	old, _ := f.reg.Topic("ns.w")
	oldChanged := old.Changed()
	// Registering the table replaces its catalog watcher by one reading
	// the registered metadata file (not through the catalog).
	if err := f.store.RegisterTable(ctx, state.RegisteredTable{Ident: "ns.w", MetadataLocation: tbl.MetadataLocation()}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the watcher to be replaced", func() bool {
		f.reg.mu.RLock()
		defer f.reg.mu.RUnlock()
		w, ok := f.reg.watchers["ns.w"]
		return ok && w.src.metaLoc != ""
	})
	// Fetches long-polling on the retired topic are woken to look again.
	select {
	case <-oldChanged:
	case <-time.After(5 * time.Second):
		t.Fatal("fetches waiting on the retired topic were not woken")
	}
	// Ten polls of the successor: it must still be waiting.
	time.Sleep(200 * time.Millisecond)
	if _, ok := f.reg.Topic("ns.w"); ok {
		t.Fatal("the successor serves the topic while its predecessor is still running")
	}
	unhold()
	waitFor(t, "the successor to serve the topic", func() bool {
		tp, ok := f.reg.Topic("ns.w")
		return ok && tp.Index.HighWatermark(0) == 2
	})
	if !fc.released.Load() {
		t.Fatal("the successor opened the index before its predecessor returned")
	}
}

// A rollback that commits nothing new still changes what a fetch waiting at
// the high watermark must answer: it must be woken, and find the index
// truncated.
func TestRollbackWakesWaitingFetches(t *testing.T) {
	f := startRegistry(t, t.TempDir())
	ident := table.Identifier{"ns", "rw"}
	createTable(t, f, ident)
	first := appendIDs(t, f.cat, ident, 1, 2)
	appendIDs(t, f.cat, ident, 3, 4, 5)
	waitFor(t, "5 records", func() bool { tp, ok := f.reg.Topic("ns.rw"); return ok && tp.Index.HighWatermark(0) == 5 })
	tp, _ := f.reg.Topic("ns.rw")
	before := tp.Index.LeaderEpoch()
	// Let the wake-up of the last append pass: the channel waited on must
	// be one that only a later change closes.
	time.Sleep(100 * time.Millisecond)
	changed := tp.Changed()

	rollbackTo(t, f.cat, ident, first.CurrentSnapshot().SnapshotID)
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("a fetch waiting at the high watermark was not woken by the rollback")
	}
	if hw, ep := tp.Index.HighWatermark(0), tp.Index.FenceEpoch(); hw != 2 || ep <= before {
		t.Fatalf("woken with hwm %d fence epoch %d, want the truncated index (2, above %d)", hw, ep, before)
	}
}

// A catalog that cannot be reached for a while is not a damaged table:
// fetches must not get an error for it, and indexing goes on once it is
// back. A snapshot whose data file is missing is damage, and is reported.
func TestUnreachableCatalogIsNotAnIndexError(t *testing.T) {
	dir := t.TempDir()
	f, fc := startFlaky(t, dir)
	ident := table.Identifier{"ns", "u"}
	createTable(t, f, ident)
	appendIDs(t, f.cat, ident, 1, 2, 3)
	waitFor(t, "3 records", func() bool { tp, ok := f.reg.Topic("ns.u"); return ok && tp.Index.HighWatermark(0) == 3 })
	tp, _ := f.reg.Topic("ns.u")

	fc.setFail(errors.New("dial tcp 10.0.0.1:8181: connection refused"))
	before := dataFiles(t, dir)
	appendIDs(t, f.cat, ident, 4)
	// Failed polls back off (retryDelay, doubling per failure): two more
	// show that failures are not index errors without pushing the next
	// poll far out.
	n := fc.failed.Load()
	waitFor(t, "more failed loads", func() bool { return fc.failed.Load() >= n+2 })
	if err := tp.IndexError(); err != nil {
		t.Fatalf("an unreachable catalog is reported to fetches as %v", err)
	}

	// While the catalog is away, the new snapshot's data file goes: once
	// the catalog is back, that snapshot is damage.
	for p := range dataFiles(t, dir) {
		if !before[p] {
			if err := os.Remove(p); err != nil {
				t.Fatal(err)
			}
		}
	}
	fc.setFail(nil)
	// The next poll comes within the backoff reached meanwhile: on a
	// loaded machine the failures before it may have pushed it to
	// maxRetryDelay.
	deadline := time.Now().Add(maxRetryDelay + 10*time.Second)
	for tp.IndexError() == nil {
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting for the damaged snapshot to be reported")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if hw := tp.Index.HighWatermark(0); hw != 3 {
		t.Fatalf("hwm %d after a damaged snapshot, want 3", hw)
	}
}

// dataFiles returns the Parquet files under dir.
func dataFiles(t *testing.T, dir string) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".parquet") {
			out[p] = true
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
