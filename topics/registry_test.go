package topics

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/rs/zerolog"

	"github.com/lakegw/lakegw/changelog"
	"github.com/lakegw/lakegw/lake"
	"github.com/lakegw/lakegw/offsets"
	"github.com/lakegw/lakegw/state"
)

var testSchema = iceberg.NewSchemaWithIdentifiers(0, []int{1},
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})

// createTable creates the table in namespace ns with testSchema.
func createTable(t *testing.T, f *fixture, ident table.Identifier) {
	t.Helper()
	ctx := context.Background()
	if err := f.cat.CreateNamespace(ctx, ident[:1], nil); err != nil {
		t.Fatal(err)
	}
	if _, err := f.cat.CreateTable(ctx, ident, testSchema); err != nil {
		t.Fatal(err)
	}
}

// rollbackTo commits a rollback of the table to snapshot id: a history
// rewrite the index must truncate.
func rollbackTo(t *testing.T, cat catalog.Catalog, ident table.Identifier, id int64) {
	t.Helper()
	commitTx(t, cat, ident, func(tx *table.Transaction) error { return tx.RollbackToSnapshot(id) })
}

// commitTx loads the table, applies change to a transaction and commits it.
func commitTx(t *testing.T, cat catalog.Catalog, ident table.Identifier, change func(*table.Transaction) error) {
	t.Helper()
	ctx := context.Background()
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := change(tx); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

func appendIDs(t *testing.T, cat catalog.Catalog, ident table.Identifier, ids ...int64) *table.Table {
	t.Helper()
	ctx := context.Background()
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := table.SchemaToArrowSchema(testSchema, nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for _, id := range ids {
		b.Field(0).(*array.Int64Builder).Append(id)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	at := array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
	defer at.Release()
	next, err := tbl.AppendTable(ctx, at, 1000, nil)
	if err != nil {
		t.Fatal(err)
	}
	return next
}

// expireAllButLast2 commits an expiry keeping the table's last 2
// snapshots, with opts (table.WithPostCommit(false) keeps the files).
func expireAllButLast2(t *testing.T, cat catalog.Catalog, ident table.Identifier, opts ...table.ExpireSnapshotsOpt) {
	t.Helper()
	commitTx(t, cat, ident, func(tx *table.Transaction) error {
		return tx.ExpireSnapshots(append([]table.ExpireSnapshotsOpt{table.WithRetainLast(2), table.WithOlderThan(0)}, opts...)...)
	})
}

type fixture struct {
	cat   catalog.Catalog
	store *state.Store
	reg   *Registry
	stop  func()
}

func startRegistry(t *testing.T, dir string) *fixture {
	t.Helper()
	return startRegistryWith(t, dir, func(c catalog.Catalog) catalog.Catalog { return c })
}

// startRegistryWith starts a registry that sees the catalog through wrap;
// the fixture's cat is the catalog itself.
func startRegistryWith(t *testing.T, dir string, wrap func(catalog.Catalog) catalog.Catalog) *fixture {
	t.Helper()
	return startRegistrySetUp(t, dir, wrap, nil)
}

// startRegistrySetUp is startRegistryWith, with setup (if not nil) given
// the registry and the catalog before the registry runs.
func startRegistrySetUp(t *testing.T, dir string, wrap func(catalog.Catalog) catalog.Catalog, setup func(*Registry, catalog.Catalog)) *fixture {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cat, err := lake.OpenCatalog(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	store, err := state.Open(ctx, filepath.Join(dir, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	reg := New(Config{PollInterval: 20 * time.Millisecond, ListInterval: 50 * time.Millisecond}, wrap(cat), store, zerolog.New(zerolog.NewTestWriter(t)))
	if setup != nil {
		setup(reg, cat)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		reg.Run(ctx)
	}()
	f := &fixture{cat: cat, store: store, reg: reg}
	f.stop = func() {
		cancel()
		<-done
		store.Close()
	}
	t.Cleanup(f.stop)
	return f
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestNewTablesAndSnapshotsAppearWithoutRestart(t *testing.T) {
	dir := t.TempDir()
	f := startRegistry(t, dir)
	ctx := context.Background()
	if err := f.cat.CreateNamespace(ctx, table.Identifier{"ns"}, nil); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b"} {
		if _, err := f.cat.CreateTable(ctx, table.Identifier{"ns", name}, testSchema); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "topic ns."+name, func() bool { _, ok := f.reg.Topic("ns." + name); return ok })
	}
	tp, _ := f.reg.Topic("ns.a")
	changed := tp.Changed()
	appendIDs(t, f.cat, table.Identifier{"ns", "a"}, 1, 2, 3)
	select {
	case <-changed:
	case <-time.After(5 * time.Second):
		t.Fatal("no wake-up after a commit")
	}
	waitFor(t, "3 records", func() bool { return tp.Index.HighWatermark(0) == 3 })
	if got := len(f.reg.Topics()); got != 2 {
		t.Fatalf("%d topics, want 2", got)
	}
	if err := f.cat.DropTable(ctx, table.Identifier{"ns", "b"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "dropped table to go", func() bool { _, ok := f.reg.Topic("ns.b"); return !ok })
}

func TestRollbackTruncatesUnderNewEpoch(t *testing.T) {
	dir := t.TempDir()
	f := startRegistry(t, dir)
	ident := table.Identifier{"ns", "r"}
	createTable(t, f, ident)
	first := appendIDs(t, f.cat, ident, 1, 2)
	appendIDs(t, f.cat, ident, 3, 4, 5)
	waitFor(t, "topic", func() bool { tp, ok := f.reg.Topic("ns.r"); return ok && tp.Index.HighWatermark(0) == 5 })
	tp, _ := f.reg.Topic("ns.r")
	dropped, _ := tp.Index.Locate(0, 2)

	rollbackTo(t, f.cat, ident, first.CurrentSnapshot().SnapshotID)
	waitFor(t, "truncation", func() bool { return tp.Index.FenceEpoch() > dropped.Epoch && tp.Index.HighWatermark(0) == 2 })
	appendIDs(t, f.cat, ident, 6)
	waitFor(t, "new snapshot after rollback", func() bool { return tp.Index.HighWatermark(0) == 3 })
	// A consumer that read the rolled-back snapshot is told its epoch
	// ended at 2, where the kept history ends.
	if epoch, end, ok := tp.Index.EpochEnd(0, dropped.Epoch); !ok || epoch >= dropped.Epoch || end != 2 {
		t.Fatalf("the rolled-back snapshot's epoch %d ends at %d under %d (%v), want 2 under an older one", dropped.Epoch, end, epoch, ok)
	}
	if g, _ := tp.Index.Locate(0, 2); g.Epoch <= tp.Index.FenceEpoch() {
		t.Fatalf("the snapshot after the rollback has epoch %d, want above the rollback's %d", g.Epoch, tp.Index.FenceEpoch())
	}
}

func TestRegistryStopsEveryGoroutine(t *testing.T) {
	before := runtime.NumGoroutine()
	dir := t.TempDir()
	f := startRegistry(t, dir)
	ctx := context.Background()
	if err := f.cat.CreateNamespace(ctx, table.Identifier{"ns"}, nil); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"x", "y", "z"} {
		if _, err := f.cat.CreateTable(ctx, table.Identifier{"ns", name}, testSchema); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "3 topics", func() bool { return len(f.reg.Topics()) == 3 })
	f.stop()
	waitFor(t, "goroutines to stop", func() bool { return runtime.NumGoroutine() <= before+2 })
}

func TestExpiredSnapshotsBecomeACompactedPrefix(t *testing.T) {
	dir := t.TempDir()
	f := startRegistry(t, dir)
	ctx := context.Background()
	ident := table.Identifier{"ns", "e"}
	createTable(t, f, ident)
	appendIDs(t, f.cat, ident, 1, 2, 3, 4)
	tbl, err := f.cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.Delete(ctx, iceberg.LessThan(iceberg.Reference("id"), int64(3)), nil); err != nil {
		t.Fatal(err)
	}
	appendIDs(t, f.cat, ident, 5)
	waitFor(t, "7 records", func() bool { tp, ok := f.reg.Topic("ns.e"); return ok && tp.Index.HighWatermark(0) == 7 })
	tp, _ := f.reg.Topic("ns.e")
	// The epoch of each snapshot's records, as its batches carry it.
	var epochs [3]int32
	for i, o := range []int64{0, 4, 6} {
		g, _ := tp.Index.Locate(0, o)
		epochs[i] = g.Epoch
	}
	leader := tp.Index.LeaderEpoch()

	// Expire the first snapshot: the second (2 live rows) becomes the
	// compacted prefix in place of the first 6 offsets.
	expireAllButLast2(t, f.cat, ident)
	waitFor(t, "compacted prefix", func() bool { return tp.Index.LogStart(0) == 4 })
	if hw, ep := tp.Index.HighWatermark(0), tp.Index.FenceEpoch(); hw != 7 || ep <= leader {
		t.Fatalf("after expiry: hwm %d fence epoch %d, want 7 and above %d, so every client validates", hw, ep, leader)
	}
	// A consumer whose last record was replaced (at offsets 4..6) sees
	// the truncation and rereads from 4; one whose last record is the
	// third snapshot's (at 7) reads on: its epoch ends past it.
	for i, e := range epochs[:2] {
		if ep, end, ok := tp.Index.EpochEnd(0, e); !ok || ep > e || end != 4 {
			t.Fatalf("epoch %d of snapshot %d must end at the prefix's base 4: %d %d %v", e, i+1, ep, end, ok)
		}
	}
	if ep, end, ok := tp.Index.EpochEnd(0, epochs[2]); !ok || ep != epochs[2] || end != 7 {
		t.Fatalf("epoch %d of the kept snapshot must end at the high watermark 7: %d %d %v", epochs[2], ep, end, ok)
	}
	seg, ok := tp.Index.Locate(0, 4)
	if !ok || seg.Kind != offsets.KindCompactedPrefix {
		t.Fatalf("offset 4: %+v", seg)
	}
	c, err := tp.Changes(ctx, seg, tp.Encoding())
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Records) != 2 || c.Records[0].Op != changelog.OpRead {
		t.Fatalf("prefix has %d records", len(c.Records))
	}
	last, _ := tp.Index.Locate(0, 6)
	if last.Kind != offsets.KindChanges || last.Count != 1 {
		t.Fatalf("offset 6 must still be the last snapshot's insert: %+v", last)
	}
}

// Every indexed snapshot expires while the gateway is down: the topic goes
// on after its old end with the live rows of the oldest retained snapshot,
// under a new epoch, and no offset is reused.
func TestAllIndexedSnapshotsExpiredWhileAway(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	f := startRegistry(t, dir)
	ident := table.Identifier{"ns", "gone"}
	createTable(t, f, ident)
	appendIDs(t, f.cat, ident, 1, 2, 3)
	appendIDs(t, f.cat, ident, 4)
	waitFor(t, "4 records", func() bool { tp, ok := f.reg.Topic("ns.gone"); return ok && tp.Index.HighWatermark(0) == 4 })
	before, _ := f.reg.Topic("ns.gone")
	oldEpoch := before.Index.LeaderEpoch()
	f.stop()

	cat, err := lake.OpenCatalog(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	appendIDs(t, cat, ident, 5, 6)
	appendIDs(t, cat, ident, 7)
	expireAllButLast2(t, cat, ident)

	g := startRegistry(t, dir)
	// Live rows at the oldest retained snapshot: ids 1-6; then the insert of 7.
	waitFor(t, "the topic to continue", func() bool { tp, ok := g.reg.Topic("ns.gone"); return ok && tp.Index.HighWatermark(0) == 4+6+1 })
	tp, _ := g.reg.Topic("ns.gone")
	if ls := tp.Index.LogStart(0); ls != 4 {
		t.Fatalf("log start %d, want 4", ls)
	}
	seg, ok := tp.Index.Locate(0, 4)
	if !ok || seg.Kind != offsets.KindCompactedPrefix || seg.Count != 6 || seg.Epoch <= oldEpoch {
		t.Fatalf("offset 4: %+v, want the prefix of 6 rows under an epoch above %d", seg, oldEpoch)
	}
	if ep, end, ok := tp.Index.EpochEnd(0, oldEpoch); !ok || ep > oldEpoch || end != 4 {
		t.Fatalf("epoch %d must end at the old end 4: %d %d %v", oldEpoch, ep, end, ok)
	}
}
