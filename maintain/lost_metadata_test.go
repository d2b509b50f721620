package maintain_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/rs/zerolog"

	"github.com/lakegw/lakegw/lake"
	"github.com/lakegw/lakegw/maintain"
	"github.com/lakegw/lakegw/quickstart"
)

// lostToCleanup reports whether err is a racing goroutine's own doing: a
// commit that won deleted, after it (write.metadata.delete-after-commit),
// the metadata file another goroutine had just found current, so that
// one's load or commit finds it gone. Only the race's setup meets it.
func lostToCleanup(err error) bool {
	return err != nil && (errors.Is(err, fs.ErrNotExist) || strings.Contains(err.Error(), "no such file or directory"))
}

// TestLostCommitsMetadataRemovedAtOnce races property commits from many
// goroutines, as a writer, a compaction and a maintenance pass race on a
// streaming table: a commit that loses the catalog's swap leaves the
// metadata file it wrote behind. The pass removes every such file at once
// (they are minutes old, far inside the orphan grace period) and keeps the
// current file, its log and a file numbered past the current version (a
// commit in flight); the table still loads and commits afterwards.
func TestLostCommitsMetadataRemovedAtOnce(t *testing.T) {
	ctx := context.Background()
	cat, _ := openCatalog(t)
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	d := quickstart.NewDemo(cat, log, quickstart.DemoOptions{Seed: 7})
	for range 3 {
		if _, err := d.Step(ctx); err != nil {
			t.Fatal(err)
		}
	}
	ident := quickstart.DefaultTable()
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Go(func() {
			for i := range 15 {
				tbl, err := cat.LoadTable(ctx, ident)
				if lostToCleanup(err) {
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				tx := tbl.NewTransaction()
				if err := tx.SetProperties(iceberg.Properties{fmt.Sprintf("race.%d", g): fmt.Sprint(i)}); err != nil {
					t.Error(err)
					return
				}
				if _, err := tx.Commit(ctx); err != nil && !lake.IsCommitConflict(err) && !lostToCleanup(err) {
					t.Errorf("commit: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()

	tbl := loadTable(t, cat, ident)
	metaDir := filepath.Dir(localDir(tbl.MetadataLocation()))
	referenced := map[string]bool{localDir(tbl.MetadataLocation()): true}
	for e := range tbl.Metadata().PreviousFiles() {
		referenced[localDir(e.MetadataFile)] = true
	}
	// One lost commit for certain, whatever the race did: a file of the
	// current version under another uuid (a commit from the same base that
	// lost), and one numbered past it (in flight: it must stay).
	cur := filepath.Base(tbl.MetadataLocation())
	version, _, _ := strings.Cut(cur, "-")
	body, err := os.ReadFile(localDir(tbl.MetadataLocation()))
	if err != nil {
		t.Fatal(err)
	}
	sameBase := filepath.Join(metaDir, version+"-00000000-0000-0000-0000-00000000beef.metadata.json")
	var next int
	fmt.Sscan(strings.TrimLeft(version, "0"), &next)
	inFlight := filepath.Join(metaDir, fmt.Sprintf("%05d-00000000-0000-0000-0000-00000000cafe.metadata.json", next+1))
	for _, f := range []string{sameBase, inFlight} {
		if err := os.WriteFile(f, body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	lost := lostFiles(t, metaDir, referenced, inFlight)
	t.Logf("%d metadata files of lost commits (%d from the race)", len(lost), len(lost)-1)

	// No orphan cleanup in this pass (the background loop runs it hourly)
	// and a grace period of a day: only the lost-commit rule can remove
	// them, at every pass.
	rep, err := maintain.Run(ctx, cat, ident, maintain.Options{Log: log, OrphanGrace: 24 * time.Hour, SkipOrphans: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.LostCommits != len(lost) {
		t.Errorf("report says %d lost commits removed, want %d", rep.LostCommits, len(lost))
	}
	for _, f := range lost {
		if exists(f) {
			t.Errorf("metadata file of a lost commit %s still exists", filepath.Base(f))
		}
	}
	if !exists(inFlight) {
		t.Errorf("a metadata file numbered past the current version (a commit in flight) was removed")
	}
	after := loadTable(t, cat, ident)
	if !exists(localDir(after.MetadataLocation())) {
		t.Fatalf("current metadata file removed")
	}
	for e := range after.Metadata().PreviousFiles() {
		if !exists(localDir(e.MetadataFile)) {
			t.Errorf("metadata log entry %s removed", filepath.Base(e.MetadataFile))
		}
	}
	live, err := d.LiveRows(ctx)
	if err != nil {
		t.Fatal(err)
	}
	requireSameOrders(t, "after removing lost commits", live, d.Expected())
	if _, err := d.Step(ctx); err != nil {
		t.Fatalf("demo step after the pass: %v", err)
	}
}

// lostFiles lists the metadata JSON files of metaDir that nothing
// references, except skip.
func lostFiles(t *testing.T, metaDir string, referenced map[string]bool, skip string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(metaDir, "*.metadata.json"))
	if err != nil {
		t.Fatal(err)
	}
	var lost []string
	for _, n := range names {
		if !referenced[n] && n != skip {
			lost = append(lost, n)
		}
	}
	return lost
}
