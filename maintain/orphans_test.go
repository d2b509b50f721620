package maintain_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lakegw/lakegw/maintain"
	"github.com/lakegw/lakegw/quickstart"
)

// ageAll sets the modification time of every file under dir to when.
func ageAll(t *testing.T, dir string, when time.Time) {
	t.Helper()
	err := filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		return os.Chtimes(p, when, when)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func writeFile(t *testing.T, path string, mtime time.Time) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("stray"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, mtime, mtime); err != nil {
		t.Fatal(err)
	}
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// TestOrphansPastGraceRemoved checks orphan cleanup on the demo table:
// unreferenced files older than the grace period go, younger ones (a
// commit in flight) and every referenced file stay, and the table still
// reads the same.
func TestOrphansPastGraceRemoved(t *testing.T) {
	ctx := context.Background()
	cat, _ := openCatalog(t)
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	d := quickstart.NewDemo(cat, log, quickstart.DemoOptions{Seed: 3})
	for range 5 {
		if _, err := d.Step(ctx); err != nil {
			t.Fatal(err)
		}
	}
	ident := quickstart.DefaultTable()
	dir := localDir(loadTable(t, cat, ident).Location())
	now := time.Now()
	// Everything the table references is old too: only references keep it.
	ageAll(t, dir, now.Add(-48*time.Hour))
	old := filepath.Join(dir, "data", "00000-0-stray-old.parquet")
	young := filepath.Join(dir, "data", "00000-0-stray-young.parquet")
	youngButPastFloor := filepath.Join(dir, "metadata", "stray-20min.avro")
	writeFile(t, old, now.Add(-25*time.Hour))
	writeFile(t, young, now.Add(-time.Hour))
	writeFile(t, youngButPastFloor, now.Add(-20*time.Minute))

	before := statDir(t, dir)
	rep, err := maintain.Run(ctx, cat, ident, maintain.Options{Log: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(rep)
	if exists(old) || !exists(young) || !exists(youngButPastFloor) {
		t.Fatalf("after default grace (1 day): old stray exists %v (want false), 1 h stray %v, 20 min stray %v (want true)",
			exists(old), exists(young), exists(youngButPastFloor))
	}
	if rep.Orphans.Removed != 1 {
		t.Errorf("report says %d orphans removed, want 1", rep.Orphans.Removed)
	}
	if after := statDir(t, dir); after.files != before.files-1 {
		t.Errorf("%d files before, %d after: want exactly the stray removed", before.files, after.files)
	}

	// A grace under the floor is raised to it: the 20 minute file goes,
	// nothing younger than 10 minutes could.
	rep, err = maintain.Run(ctx, cat, ident, maintain.Options{Log: log, OrphanGrace: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Orphans.Grace != maintain.MinOrphanGrace || exists(young) || exists(youngButPastFloor) {
		t.Fatalf("grace %v (want %v); 1 h stray exists %v, 20 min stray exists %v (want both gone)",
			rep.Orphans.Grace, maintain.MinOrphanGrace, exists(young), exists(youngButPastFloor))
	}
	live, err := d.LiveRows(ctx)
	if err != nil {
		t.Fatal(err)
	}
	requireSameOrders(t, "after orphan cleanup", live, d.Expected())
	if _, err := d.Step(ctx); err != nil {
		t.Fatalf("demo step after orphan cleanup: %v", err)
	}
}

// TestDryRunChangesNothing runs a pass that would do everything, dry.
func TestDryRunChangesNothing(t *testing.T) {
	ctx := context.Background()
	cat, _, log := agedDemo(t, 40)
	ident := quickstart.DefaultTable()
	dir := localDir(loadTable(t, cat, ident).Location())
	ageAll(t, dir, time.Now().Add(-48*time.Hour))
	writeFile(t, filepath.Join(dir, "data", "stray.parquet"), time.Now().Add(-48*time.Hour))
	before := statDir(t, dir)
	head := loadTable(t, cat, ident).Metadata().CurrentSnapshot().SnapshotID

	rep, err := maintain.Run(ctx, cat, ident, maintain.Options{Log: log, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Log(rep)
	if rep.Expiry.Expired == 0 || rep.Expiry.FilesRemoved == 0 || rep.Orphans.Removed != 1 || rep.Compaction.Skipped != "" || rep.Manifests.Before <= maintain.DefaultMaxManifests {
		t.Errorf("dry run plans too little: %+v", rep)
	}
	if after := statDir(t, dir); after != before {
		t.Errorf("dry run changed files: %+v -> %+v", before, after)
	}
	if got := loadTable(t, cat, ident).Metadata().CurrentSnapshot().SnapshotID; got != head {
		t.Errorf("dry run committed: head %d -> %d", head, got)
	}
}
