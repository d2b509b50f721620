package maintain_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/rs/zerolog"

	"github.com/lakegw/lakegw/internal/lsmmodel"
	"github.com/lakegw/lakegw/lsm"
	"github.com/lakegw/lakegw/maintain"

	"github.com/lakegw/lakegw/changelog"
)

// changelogFiles lists the LSM changelog files and changelog manifests
// under a table directory.
func changelogFiles(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if strings.HasPrefix(rel, "changelog/") || strings.HasPrefix(rel, "metadata/lsm-changelog-") {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

// lsmWrites numbers every row writeLSM writes, so that each of its commits
// changes rows: the LSM writer commits nothing for upserts of rows as they
// already are, and a test that counts on snapshots would wait forever.
var lsmWrites atomic.Int64

func writeLSM(t *testing.T, tb *lsm.Table, commits int) {
	t.Helper()
	ctx := context.Background()
	w, err := tb.NewWriter(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for c := range commits {
		for k := range 5 {
			id := int64((c*3 + k) % 17)
			if err := w.Upsert(map[string]any{"id": id, "name": fmt.Sprint("n", c), "qty": lsmWrites.Add(1), "price": 1.5}); err != nil {
				t.Fatal(err)
			}
		}
		if c%4 == 3 {
			if err := w.Delete(map[string]any{"id": int64(c % 17)}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := w.Commit(ctx); err != nil {
			t.Fatalf("commit %d: %v", c, err)
		}
	}
}

// newLSM creates a lakegw LSM table shop.<name> (schema id, name, qty,
// price) in a fresh catalog, with the aggressive expiry properties.
func newLSM(t *testing.T, name string, buckets int) (catalog.Catalog, table.Identifier, *lsm.Table, zerolog.Logger) {
	t.Helper()
	ctx := context.Background()
	cat, _ := openCatalog(t)
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	ident := table.Identifier{"shop", name}
	if err := cat.CreateNamespace(ctx, catalog.NamespaceFromIdent(ident), nil); err != nil {
		t.Fatal(err)
	}
	tb, err := lsm.Create(ctx, cat, ident, lsmmodel.Schema, lsm.CreateOptions{PrimaryKey: []string{"id"}, Buckets: buckets}, lsm.Options{Log: log})
	if err != nil {
		t.Fatal(err)
	}
	tbl := loadTable(t, cat, ident)
	for k, v := range maintain.CreateProperties() {
		if tbl.Properties()[k] != v {
			t.Fatalf("LSM table property %s=%q, want %q", k, tbl.Properties()[k], v)
		}
	}
	setProps(t, cat, ident, aggressive)
	return cat, ident, tb, log
}

// TestLSMTableKeepsChangelogFiles expires most of an LSM table's history
// and removes its orphans: the changelog files, which no Iceberg metadata
// references, all stay (no Retention hook: the safe default), and the
// table reads the same.
func TestLSMTableKeepsChangelogFiles(t *testing.T) {
	ctx := context.Background()
	cat, ident, tb, log := newLSM(t, "carts", 2)
	tbl := loadTable(t, cat, ident)
	writeLSM(t, tb, 30)
	dir := localDir(tbl.Location())
	ageAll(t, dir, time.Now().Add(-48*time.Hour))
	stray := filepath.Join(dir, "data", "bucket-00000", "stray.parquet")
	writeFile(t, stray, time.Now().Add(-48*time.Hour))
	logsBefore := changelogFiles(t, dir)
	rowsBefore := scanAll(t, loadTable(t, cat, ident), 0)

	rep, err := maintain.Run(ctx, cat, ident, maintain.Options{Log: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(rep)
	if rep.Expiry.Expired < 15 || rep.Compaction.Skipped == "" {
		t.Errorf("want most snapshots expired and no compaction of an LSM table: %+v", rep)
	}
	if exists(stray) {
		t.Error("stray file under data/ survived orphan cleanup")
	}
	if got := changelogFiles(t, dir); !slices.Equal(got, logsBefore) || len(got) < 30 {
		t.Errorf("changelog files: %d before, %d after (want all %d kept)", len(logsBefore), len(got), len(logsBefore))
	}
	if rep.Orphans.Kept < len(logsBefore)/2 {
		t.Errorf("report says %d kept for the changelog, want about %d", rep.Orphans.Kept, len(logsBefore))
	}
	after := loadTable(t, cat, ident)
	if got := scanAll(t, after, 0); !equalRows(got, rowsBefore) {
		t.Errorf("table rows changed across maintenance: %d rows -> %d", len(rowsBefore), len(got))
	}
	for _, s := range after.Metadata().Snapshots() {
		scanAll(t, after, s.SnapshotID) // every retained snapshot still reads
	}
	writeLSM(t, tb, 3) // the writer goes on
}

// recordingRetention is a Retention hook that records its calls and keeps
// only the changelog files it is told to.
type recordingRetention struct {
	keep      map[string]bool
	before    int
	expired   []table.Snapshot
	committed int
}

func (r *recordingRetention) BeforeExpire(context.Context, *table.Table, time.Time, int64) error {
	r.before++
	return nil
}

func (r *recordingRetention) AfterExpire(_ context.Context, _ *table.Table, _ *table.Transaction, expired []table.Snapshot) error {
	r.expired = expired
	return nil
}

func (r *recordingRetention) KeepFiles(context.Context, *table.Table) (map[string]bool, error) {
	return r.keep, nil
}

func (r *recordingRetention) Committed(context.Context, *table.Table) error {
	r.committed++
	return nil
}

// TestRetentionHookDecides checks the four calls of a Retention hook and
// that, with a hook, orphan cleanup keeps exactly the files it lists.
func TestRetentionHookDecides(t *testing.T) {
	ctx := context.Background()
	cat, ident, tb, log := newLSM(t, "hooked", 1)
	writeLSM(t, tb, 20)
	before := loadTable(t, cat, ident)
	dir := localDir(before.Location())
	ageAll(t, dir, time.Now().Add(-48*time.Hour))
	logs := changelogFiles(t, dir)
	kept := logs[len(logs)/2:]
	hook := &recordingRetention{keep: map[string]bool{}}
	for _, f := range kept {
		hook.keep["file://"+f] = true // metadata spelling; cleanup must match it to the listed path
	}

	rep, err := maintain.Run(ctx, cat, ident, maintain.Options{Log: log, Retention: hook})
	if err != nil {
		t.Fatal(err)
	}
	if hook.before != 1 || hook.committed != 1 || len(hook.expired) != rep.Expiry.Expired || len(hook.expired) == 0 {
		t.Fatalf("hook calls: before %d, committed %d, %d expired (report %d)", hook.before, hook.committed, len(hook.expired), rep.Expiry.Expired)
	}
	after := loadTable(t, cat, ident)
	for i, s := range hook.expired {
		if after.SnapshotByID(s.SnapshotID) != nil || before.SnapshotByID(s.SnapshotID) == nil {
			t.Fatalf("hook was told snapshot %d expired; before %v, after %v", s.SnapshotID,
				before.SnapshotByID(s.SnapshotID) != nil, after.SnapshotByID(s.SnapshotID) != nil)
		}
		if i > 0 && s.TimestampMs < hook.expired[i-1].TimestampMs {
			t.Fatal("expired snapshots not oldest first")
		}
	}
	if got := changelogFiles(t, dir); !slices.Equal(got, kept) {
		t.Errorf("with the hook, %d changelog files remain; want the %d it keeps", len(got), len(kept))
	}
}

// TestPinsHoldSnapshots checks that a consumer's pin holds the snapshots it
// needs, and that lakegw.consumer.max-pin bounds it.
func TestPinsHoldSnapshots(t *testing.T) {
	ctx := context.Background()
	cat, ident, tb, log := newLSM(t, "pinned", 1)
	writeLSM(t, tb, 10)
	// Past the pin's one-second slack, so the older commits can expire.
	time.Sleep(1500 * time.Millisecond)
	writeLSM(t, tb, 15)
	snaps := loadTable(t, cat, ident).Metadata().Snapshots()
	pinned := snaps[10] // the first commit after the pause
	var asked []string
	pin := func(_ context.Context, topic string) (int64, bool) {
		asked = append(asked, topic)
		return pinned.TimestampMs, true
	}
	rep, err := maintain.Run(ctx, cat, ident, maintain.Options{Log: log, Pin: pin})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(rep)
	if !slices.Equal(asked, []string{"shop.pinned"}) || !rep.Expiry.Pin.Pinned || rep.Expiry.Pin.Capped() {
		t.Fatalf("pin asked for %v; report %+v", asked, rep.Expiry.Pin)
	}
	tbl := loadTable(t, cat, ident)
	for i, s := range snaps {
		if kept := tbl.SnapshotByID(s.SnapshotID) != nil; kept != (i >= 10) {
			t.Fatalf("snapshot %d of %d (pin at 10) kept %v", i, len(snaps), kept)
		}
	}

	// A pin older than max-pin is cut there: with max-pin 1 ms nothing
	// beyond the table's own 10 snapshots is kept.
	setProps(t, cat, ident, map[string]string{changelog.PropMaxPinMs: "1"})
	rep, err = maintain.Run(ctx, cat, ident, maintain.Options{Log: log, Pin: pin})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Expiry.Pin.Capped() || rep.Expiry.Pin.CappedBy != changelog.PropMaxPinMs {
		t.Fatalf("pin past max-pin not capped: %+v", rep.Expiry.Pin)
	}
	if n := len(loadTable(t, cat, ident).Metadata().Snapshots()); n > 11 {
		t.Fatalf("%d snapshots kept past a capped pin, want about 10", n)
	}
}

// TestPinHoldsAtMostMaxPinSnapshots checks that a pin holding snapshots
// keeps no more than lakegw.consumer.max-pin-snapshots of them, however far
// back the group is: each is in the metadata file every commit rewrites.
func TestPinHoldsAtMostMaxPinSnapshots(t *testing.T) {
	ctx := context.Background()
	cat, ident, tb, log := newLSM(t, "pincount", 1)
	setProps(t, cat, ident, map[string]string{changelog.PropMaxPinSnapshots: "20"})
	// Three runs of ten commits, each run past the pin's one-second slack
	// from the next, so that the cap falls between two runs.
	for run := range 3 {
		if run > 0 {
			time.Sleep(1500 * time.Millisecond)
		}
		writeLSM(t, tb, 10)
	}
	snaps := loadTable(t, cat, ident).Metadata().Snapshots()
	pin := func(context.Context, string) (int64, bool) { return snaps[0].TimestampMs, true }
	rep, err := maintain.Run(ctx, cat, ident, maintain.Options{Log: log, Pin: pin})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Expiry.Pin.Pinned || !rep.Expiry.Pin.Capped() || rep.Expiry.Pin.CappedBy != changelog.PropMaxPinSnapshots ||
		rep.Expiry.Pin.HeldBy != maintain.HeldBySnapshots {
		t.Fatalf("a pin on all %d snapshots with max-pin-snapshots 20: report %+v", len(snaps), rep.Expiry.Pin)
	}
	tbl := loadTable(t, cat, ident)
	for i, s := range snaps {
		if kept := tbl.SnapshotByID(s.SnapshotID) != nil; kept != (i >= len(snaps)-20) {
			t.Fatalf("snapshot %d of %d kept %v; want the newest 20 kept", i, len(snaps), kept)
		}
	}
}

// scanAll reads a snapshot (0: current) with iceberg-go's scanner and
// renders its rows.
func scanAll(t *testing.T, tbl *table.Table, snapshotID int64) map[string]bool {
	t.Helper()
	var opts []table.ScanOption
	if snapshotID != 0 {
		opts = append(opts, table.WithSnapshotID(snapshotID))
	}
	tab, err := tbl.Scan(opts...).ToArrowTable(context.Background())
	if err != nil {
		t.Fatalf("scan snapshot %d: %v", snapshotID, err)
	}
	defer tab.Release()
	rows := map[string]bool{}
	tr := array.NewTableReader(tab, 0)
	for tr.Next() {
		rec := tr.RecordBatch()
		for r := range int(rec.NumRows()) {
			var parts []string
			for c := range int(rec.NumCols()) {
				parts = append(parts, rec.Column(c).ValueStr(r))
			}
			rows[strings.Join(parts, "|")] = true
		}
	}
	tr.Release()
	return rows
}

func equalRows(a, b map[string]bool) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if !b[k] {
			return false
		}
	}
	return true
}

// oldestCheckpointMs is the commit time of the snapshot under the oldest
// changelog checkpoint tag of an LSM table (0: none): the start of the
// changes its topic can still serve.
func oldestCheckpointMs(tbl *table.Table) int64 {
	var oldest int64
	for name, ref := range tbl.Metadata().Refs() {
		if !changelog.IsLSMCheckpointTag(name) {
			continue
		}
		if s := tbl.Metadata().SnapshotByID(ref.SnapshotID); s != nil && (oldest == 0 || s.TimestampMs < oldest) {
			oldest = s.TimestampMs
		}
	}
	return oldest
}

// TestPinsHoldTheChangelogOfAnLSMTable checks that on an LSM table with the
// lsm Retention hook a consumer's pin keeps the changelog checkpoints it
// needs while the snapshots expire as usual (the metadata file stays
// small), and that lakegw.consumer.max-pin bounds the hold.
func TestPinsHoldTheChangelogOfAnLSMTable(t *testing.T) {
	ctx := context.Background()
	cat, ident, tb, log := newLSM(t, "held", 1)
	// A checkpoint every 100 ms; the changes are kept 400 ms.
	setProps(t, cat, ident, map[string]string{changelog.PropRetentionMs: "400"})
	run := func(pin maintain.PinFunc) maintain.Report {
		t.Helper()
		rep, err := maintain.Run(ctx, cat, ident, maintain.Options{Log: log, Pin: pin, Retention: lsm.NewRetention(cat, log), SkipOrphans: true})
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	for range 4 {
		writeLSM(t, tb, 4)
		run(nil)
		time.Sleep(150 * time.Millisecond)
	}
	pinnedMs := oldestCheckpointMs(loadTable(t, cat, ident))
	if pinnedMs == 0 {
		t.Fatal("no changelog checkpoint after four passes")
	}
	pin := func(context.Context, string) (int64, bool) { return pinnedMs, true }
	for range 4 {
		writeLSM(t, tb, 4)
		time.Sleep(150 * time.Millisecond)
		rep := run(pin)
		if !rep.Expiry.Pin.Pinned || rep.Expiry.Pin.HeldBy != maintain.HeldByChangelog || rep.Expiry.Pin.Capped() {
			t.Fatalf("pin report %+v; want pinned, held by the changelog, not capped", rep.Expiry.Pin)
		}
	}
	tbl := loadTable(t, cat, ident)
	if got := oldestCheckpointMs(tbl); got == 0 || got > pinnedMs {
		t.Fatalf("oldest checkpoint at %d ms, after the pinned %d: the pinned changes were dropped", got, pinnedMs)
	}
	// The snapshots did not wait for the consumer: the table keeps its 10
	// (aggressive) plus the checkpoints' tagged snapshots.
	cps := 0
	for range tbl.Metadata().Refs() {
		cps++
	}
	if n := len(tbl.Metadata().Snapshots()); n > 10+cps {
		t.Fatalf("%d snapshots kept with %d refs: the pin held snapshots", n, cps)
	}
	// Without the pin the same history goes at once.
	run(nil)
	if got := oldestCheckpointMs(loadTable(t, cat, ident)); got <= pinnedMs {
		t.Fatalf("oldest checkpoint still at %d ms with no pin (pinned was %d)", got, pinnedMs)
	}

	// max-pin cuts a pin: the checkpoints older than it go.
	pinnedMs = oldestCheckpointMs(loadTable(t, cat, ident))
	setProps(t, cat, ident, map[string]string{changelog.PropMaxPinMs: "1"})
	writeLSM(t, tb, 4)
	time.Sleep(600 * time.Millisecond)
	writeLSM(t, tb, 4)
	run(pin)
	time.Sleep(150 * time.Millisecond)
	rep := run(pin)
	if !rep.Expiry.Pin.Capped() || rep.Expiry.Pin.CappedBy != changelog.PropMaxPinMs {
		t.Fatalf("pin past max-pin not capped: %+v", rep.Expiry.Pin)
	}
	if got := oldestCheckpointMs(loadTable(t, cat, ident)); got <= pinnedMs {
		t.Fatalf("oldest checkpoint still at %d ms past max-pin (pinned %d)", got, pinnedMs)
	}
}
