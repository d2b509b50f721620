package maintain_test

import (
	"context"
	"slices"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/rs/zerolog"

	"github.com/lakegw/lakegw/changelog"
	"github.com/lakegw/lakegw/derive"
	"github.com/lakegw/lakegw/maintain"
	"github.com/lakegw/lakegw/quickstart"
)

// aggressive keeps 10 snapshots whatever their age, so every pass expires.
var aggressive = iceberg.Properties{
	table.MaxSnapshotAgeMsKey:   "1",
	table.MinSnapshotsToKeepKey: "10",
}

func requireSameOrders(t *testing.T, what string, got, want map[int64]quickstart.Order) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d live orders, want %d", what, len(got), len(want))
	}
	for id, w := range want {
		if g, ok := got[id]; !ok || !g.Equal(w) {
			t.Fatalf("%s: order %d is %+v (present %v), want %+v", what, id, g, ok, w)
		}
	}
}

// TestDemoStaysBounded runs the demo writer for a few hundred commits with
// a maintenance pass every 25, and checks that what a streaming table
// accumulates stays bounded and that no retained snapshot lost a file.
func TestDemoStaysBounded(t *testing.T) {
	ctx := context.Background()
	cat, _ := openCatalog(t)
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	d := quickstart.NewDemo(cat, log, quickstart.DemoOptions{Seed: 11})
	tbl, err := d.Ensure(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range maintain.CreateProperties() {
		if tbl.Properties()[k] != v {
			t.Fatalf("demo table property %s=%q, want %q", k, tbl.Properties()[k], v)
		}
	}
	ident := quickstart.DefaultTable()
	setProps(t, cat, ident, aggressive)
	dir := localDir(tbl.Location())

	const commits, every = 300, 25
	expected := map[int64]map[int64]quickstart.Order{} // by snapshot id
	var peak []dirStats
	compactions, merges := 0, 0
	// One cache across the passes, as serve's background loop keeps: what
	// a pass remembers of a manifest must still hold at the next.
	manifests := maintain.NewManifestCache(maintain.DefaultManifestCacheBytes)
	for i := 1; i <= commits; i++ {
		id, err := d.Step(ctx)
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		expected[id] = d.Expected()
		if i%every != 0 {
			continue
		}
		rep, err := maintain.Run(ctx, cat, ident, maintain.Options{Log: log, Manifests: manifests})
		if err != nil {
			t.Fatalf("maintenance after step %d: %v", i, err)
		}
		t.Logf("after %d commits:\n%s", i, rep)
		if rep.Compaction.Skipped == "" {
			compactions++
		}
		if rep.Manifests.After < rep.Manifests.Before {
			merges++
		}
		// Data manifests merge into one; delete manifests go with the
		// deletes a compaction applies. Neither grows with the history.
		if rep.Manifests.After > 2*every+4 {
			t.Errorf("after %d commits the manifest list holds %d manifests, want at most %d", i, rep.Manifests.After, 2*every+4)
		}
		for _, id := range []int64{rep.Compaction.SnapshotID, rep.Manifests.SnapshotID} {
			if id != 0 {
				// A replace snapshot holds the rows of its parent and
				// gives a topic no record.
				expected[id] = d.Expected()
				requireNoChanges(t, loadTable(t, cat, ident), id)
			}
		}
		checkRetained(t, cat, d, ident, expected)
		live, err := d.LiveRows(ctx)
		if err != nil {
			t.Fatal(err)
		}
		requireSameOrders(t, "current snapshot", live, d.Expected())

		st := statDir(t, dir)
		cur := loadTable(t, cat, ident)
		t.Logf("after %d commits: %d snapshots, %d files, %d metadata.json (largest %d B), %d data-dir files",
			i, len(cur.Metadata().Snapshots()), st.files, st.metadataJSON, st.maxJSONBytes, st.dataFiles)
		if n := len(cur.Metadata().Snapshots()); n > 12 {
			t.Errorf("after %d commits: %d snapshots retained, want at most 12 (10 + compaction + merge)", i, n)
		}
		// What expiry made unreachable leaves the cache with it: what it
		// holds follows the retained history, not the whole of it.
		if n := manifests.Lists(); n > len(cur.Metadata().Snapshots()) {
			t.Errorf("after %d commits the manifest cache holds %d manifest lists for %d retained snapshots", i, n, len(cur.Metadata().Snapshots()))
		}
		if st.metadataJSON > maintain.DefaultPreviousVersionsMax+1 {
			t.Errorf("after %d commits: %d metadata.json files, want at most %d", i, st.metadataJSON, maintain.DefaultPreviousVersionsMax+1)
		}
		peak = append(peak, st)
	}
	if compactions == 0 || merges == 0 {
		t.Errorf("%d compactions and %d manifest merges in %d commits, want both", compactions, merges, commits)
	}
	// Bounded: the last passes hold no more than the first ones did, give
	// or take the jitter of one interval's commits.
	first, last := peak[1], peak[len(peak)-1]
	if last.files > first.files*3/2+10 || last.maxJSONBytes > first.maxJSONBytes*3/2 || last.dataFiles > first.dataFiles*3/2+10 {
		t.Errorf("table grows with commits: after %d commits %+v, after %d commits %+v", 2*every, first, commits, last)
	}
}

// requireNoChanges derives the changes of a snapshot as the gateway does
// and fails if there are any.
func requireNoChanges(t *testing.T, tbl *table.Table, id int64) {
	t.Helper()
	hist, err := changelog.MainHistory(tbl.Metadata())
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(hist, func(r changelog.SnapshotRef) bool { return r.SnapshotID == id })
	if i < 0 {
		t.Fatalf("snapshot %d not in the main history", id)
	}
	if op := hist[i].Operation; op != string(table.OpReplace) {
		t.Errorf("maintenance snapshot %d has operation %q, want replace", id, op)
	}
	c, err := derive.Derive(context.Background(), tbl, hist[i], derive.Options{Partitions: 1})
	if err != nil {
		t.Fatalf("derive snapshot %d: %v", id, err)
	}
	defer c.Release()
	if len(c.Records) != 0 {
		t.Errorf("maintenance snapshot %d yields %d change records, want none", id, len(c.Records))
	}
}

// TestCapsMetadataOfExistingTable runs a pass on a table created without
// the metadata cap: the pass sets it, and the metadata files beyond it go.
func TestCapsMetadataOfExistingTable(t *testing.T) {
	ctx := context.Background()
	cat, _ := openCatalog(t)
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	d := quickstart.NewDemo(cat, log, quickstart.DemoOptions{Seed: 9})
	if _, err := d.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	ident := quickstart.DefaultTable()
	tx := loadTable(t, cat, ident).NewTransaction()
	if err := tx.RemoveProperties([]string{table.MetadataDeleteAfterCommitEnabledKey, table.MetadataPreviousVersionsMaxKey}); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for range 30 {
		if _, err := d.Step(ctx); err != nil {
			t.Fatal(err)
		}
	}
	dir := localDir(loadTable(t, cat, ident).Location())
	if n := statDir(t, dir).metadataJSON; n < 30 {
		t.Fatalf("%d metadata files before the pass, want the uncapped 30+", n)
	}
	rep, err := maintain.Run(ctx, cat, ident, maintain.Options{Log: log, CompactDataFiles: -1})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.PropertiesSet) != 2 {
		t.Errorf("properties set: %v, want the two of the cap", rep.PropertiesSet)
	}
	if n := statDir(t, dir).metadataJSON; n > maintain.DefaultPreviousVersionsMax+1 {
		t.Errorf("%d metadata files after the pass, want at most %d", n, maintain.DefaultPreviousVersionsMax+1)
	}
	for range 5 {
		if _, err := d.Step(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if n := statDir(t, dir).metadataJSON; n > maintain.DefaultPreviousVersionsMax+1 {
		t.Errorf("%d metadata files after more commits, want at most %d", n, maintain.DefaultPreviousVersionsMax+1)
	}
	// A second pass finds the cap set and sets nothing.
	if rep, err = maintain.Run(ctx, cat, ident, maintain.Options{Log: log}); err != nil || len(rep.PropertiesSet) != 0 {
		t.Fatalf("second pass: set %v, err %v", rep.PropertiesSet, err)
	}
}

// checkRetained scans every retained snapshot whose rows the test knows: a
// file removed too early makes the scan fail or lose rows.
func checkRetained(t *testing.T, cat interface {
	LoadTable(context.Context, table.Identifier) (*table.Table, error)
}, d *quickstart.Demo, ident table.Identifier, expected map[int64]map[int64]quickstart.Order) {
	t.Helper()
	tbl, err := cat.LoadTable(context.Background(), ident)
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, s := range tbl.Metadata().Snapshots() {
		want, ok := expected[s.SnapshotID]
		if !ok {
			continue
		}
		got, err := d.RowsAt(context.Background(), s.SnapshotID)
		if err != nil {
			t.Fatalf("scan retained snapshot %d: %v", s.SnapshotID, err)
		}
		requireSameOrders(t, "retained snapshot", got, want)
		checked++
	}
	if checked < 10 {
		t.Fatalf("checked %d retained snapshots, want at least 10", checked)
	}
}
