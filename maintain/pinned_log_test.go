package maintain_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/rs/zerolog"

	"github.com/lakegw/lakegw/changelog"
	"github.com/lakegw/lakegw/derive"
	"github.com/lakegw/lakegw/maintain"
	"github.com/lakegw/lakegw/quickstart"
)

// TestPinsOfTheDemoAreLogged checks that a consumer's pin on a table lakegw
// maintains that is not an LSM table (the quickstart demo) is held by the
// pinned log, not by snapshots left in the metadata file: the table keeps
// its own retention, every pinned snapshot still scans whole and derives
// from the view WithPinned gives, orphan cleanup keeps what the log needs,
// max-pin-snapshots bounds the log, and once the pin lets go the log and
// the files only it held go.
func TestPinsOfTheDemoAreLogged(t *testing.T) {
	ctx := context.Background()
	cat, _ := openCatalog(t)
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	d := quickstart.NewDemo(cat, log, quickstart.DemoOptions{Seed: 5})
	tbl, err := d.Ensure(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ident := quickstart.DefaultTable()
	setProps(t, cat, ident, aggressive)
	// No compaction, so that files leave only with the snapshots that
	// referenced them.
	manifests := maintain.NewManifestCache(maintain.DefaultManifestCacheBytes)
	expected := map[int64]map[int64]quickstart.Order{}
	var order []int64
	step := func(n int) {
		t.Helper()
		for range n {
			id, err := d.Step(ctx)
			if err != nil {
				t.Fatal(err)
			}
			expected[id] = d.Expected()
			order = append(order, id)
		}
	}
	var pinMs int64
	held := true
	pin := func(context.Context, string) (int64, bool) { return pinMs, held }
	pass := func(orphans bool) maintain.Report {
		t.Helper()
		rep, err := maintain.Run(ctx, cat, ident, maintain.Options{Log: log, Pin: pin, Manifests: manifests,
			CompactDataFiles: -1, SkipOrphans: !orphans, OrphanGrace: maintain.MinOrphanGrace})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}

	step(5)
	// Past the pin's one-second slack: the first five commits are not
	// pinned, the ones from the sixth on are.
	time.Sleep(1500 * time.Millisecond)
	step(1)
	pinned := order[5]
	pinMs = loadTable(t, cat, ident).SnapshotByID(pinned).TimestampMs
	step(34)
	rep := pass(false)
	t.Log(rep)
	if !rep.Expiry.Pin.Pinned || rep.Expiry.Pin.HeldBy != maintain.HeldByPinnedLog || rep.Expiry.Pin.Capped() {
		t.Fatalf("pin report %+v, want pinned, held by the pinned log, not capped", rep.Expiry.Pin)
	}
	cur := loadTable(t, cat, ident)
	if n := len(cur.Metadata().Snapshots()); n > 11 {
		t.Fatalf("%d snapshots left in the metadata under a pin, want the table's own 10 and a manifest merge", n)
	}
	// The log holds the pinned snapshot's parent (its changes are derived
	// against it), the pinned snapshot and every one after it up to the
	// main branch, which it leads into.
	l := readPinnedLog(t, cur)
	hist, ok, err := changelog.PinnedHistory(cur.Metadata(), l)
	if err != nil || !ok {
		t.Fatalf("pinned history: ok %v, %v", ok, err)
	}
	if rep.Expiry.Logged != l.Len() || l.Snapshots[0].SnapshotID != order[4] {
		t.Fatalf("log of %d snapshots (report %d) starts at %d, want the pinned one's parent %d", l.Len(), rep.Expiry.Logged, l.Snapshots[0].SnapshotID, order[4])
	}
	// The manifest merge after the expiry is one more snapshot.
	written := slices.DeleteFunc(slices.Clone(hist), func(r changelog.SnapshotRef) bool { return r.SnapshotID == rep.Manifests.SnapshotID })
	if want := order[4:]; !slices.EqualFunc(written, want, func(r changelog.SnapshotRef, id int64) bool { return r.SnapshotID == id }) {
		t.Fatalf("pinned history holds %d of the demo's snapshots, want the %d from the pinned one's parent on", len(written), len(want))
	}
	expected[rep.Manifests.SnapshotID] = d.Expected()
	checkPinned(t, cur, l, hist, expected)

	// Orphan cleanup (everything aged past its grace) keeps every file
	// the log needs, and the log itself.
	ageAll(t, localDir(tbl.Location()), time.Now().Add(-2*time.Hour))
	rep = pass(true)
	if rep.Orphans.Kept == 0 {
		t.Errorf("orphan cleanup kept nothing for the pinned log: %+v", rep.Orphans)
	}
	expected[rep.Manifests.SnapshotID] = d.Expected()
	cur = loadTable(t, cat, ident)
	l = readPinnedLog(t, cur)
	if hist, ok, err = changelog.PinnedHistory(cur.Metadata(), l); err != nil || !ok || hist[0].SnapshotID != order[4] {
		t.Fatalf("pinned history after orphan cleanup: ok %v, %v", ok, err)
	}
	checkPinned(t, cur, l, hist, expected)

	// max-pin-snapshots bounds the log. Two passes apart, so that every
	// retained snapshot comes after the last manifest merge: what the
	// log lets go then shares manifests with what it keeps, and nothing
	// retained references them.
	setProps(t, cat, ident, map[string]string{changelog.PropMaxPinSnapshots: "7"})
	for range 2 {
		step(12)
		rep = pass(false)
		expected[rep.Manifests.SnapshotID] = d.Expected()
	}
	cur = loadTable(t, cat, ident)
	l = readPinnedLog(t, cur)
	if l.Len() != 7 || rep.Expiry.Pin.CappedBy != changelog.PropMaxPinSnapshots {
		t.Fatalf("with max-pin-snapshots 7 the log holds %d, pin %+v", l.Len(), rep.Expiry.Pin)
	}
	if hist, ok, err = changelog.PinnedHistory(cur.Metadata(), l); err != nil || !ok {
		t.Fatalf("capped pinned history: ok %v, %v", ok, err)
	}
	checkPinned(t, cur, l, hist, expected)
	dropped := l.Snapshots[0].ManifestList
	logFile := cur.Properties()[changelog.PropPinnedLog]

	// The pin lets go: the log and what only it held go with the next
	// pass; the table reads whole.
	held = false
	step(1)
	rep = pass(false)
	cur = loadTable(t, cat, ident)
	if p := cur.Properties()[changelog.PropPinnedLog]; p != "" || rep.Expiry.Logged != 0 {
		t.Fatalf("after the pin let go the table still names pinned log %q (%d logged)", p, rep.Expiry.Logged)
	}
	for _, f := range []string{dropped, logFile} {
		if exists(localDir(f)) {
			t.Errorf("%s is still there after the pin let go", filepath.Base(f))
		}
	}
	checkRetained(t, cat, d, ident, expected)
}

func readPinnedLog(t *testing.T, tbl *table.Table) *changelog.PinnedLog {
	t.Helper()
	p := tbl.Properties()[changelog.PropPinnedLog]
	if p == "" {
		t.Fatal("the table names no pinned log")
	}
	fsys, err := tbl.FS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	l, err := changelog.ReadPinnedLog(fsys, p)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// checkPinned reads every snapshot of a pinned history from the view that
// holds the log: each scans to the rows the writer expected, and each but
// the first derives (its parent is in the view).
func checkPinned(t *testing.T, tbl *table.Table, l *changelog.PinnedLog, hist []changelog.SnapshotRef,
	expected map[int64]map[int64]quickstart.Order) {
	t.Helper()
	ctx := context.Background()
	view, err := changelog.WithPinned(tbl, l)
	if err != nil {
		t.Fatal(err)
	}
	for i, h := range hist {
		got, err := quickstart.RowsOf(ctx, view, h.SnapshotID)
		if err != nil {
			t.Fatalf("scan snapshot %d of the pinned history: %v", i, err)
		}
		requireSameOrders(t, "pinned snapshot", got, expected[h.SnapshotID])
		if i == 0 {
			continue
		}
		c, err := derive.Derive(ctx, view, h, derive.Options{Partitions: 1})
		if err != nil {
			t.Fatalf("derive snapshot %d of the pinned history: %v", i, err)
		}
		c.Release()
	}
}
