package quickstart

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	icefiles "github.com/lakegw/lakegw/lake/files"
)

func TestConcurrentCommitIsRetriedNotLost(t *testing.T) {
	ctx := context.Background()
	cat, _ := openTestCatalog(t)
	mine := newTestDemo(t, cat, 42)
	steps(t, mine, 3)
	other := newTestDemo(t, cat, 99)
	if _, err := other.Ensure(ctx); err != nil {
		t.Fatal(err)
	}

	// The other writer commits after mine has loaded the table and written
	// its files, and before mine commits: the classic lost-update window.
	var hookCalls int
	var otherID int64
	mine.beforeCommit = func(ctx context.Context) error {
		hookCalls++
		if hookCalls > 1 {
			return nil
		}
		var err error
		otherID, err = other.Step(ctx)
		return err
	}
	mineID, err := mine.Step(ctx)
	if err != nil {
		t.Fatalf("step with a concurrent commit: %v", err)
	}
	if hookCalls != 2 {
		t.Fatalf("commit attempts %d, want 2 (one conflict, one retry)", hookCalls)
	}

	tbl, err := cat.LoadTable(ctx, DefaultTable())
	if err != nil {
		t.Fatal(err)
	}
	snap := tbl.SnapshotByID(mineID)
	if snap == nil || snap.ParentSnapshotID == nil || *snap.ParentSnapshotID != otherID {
		t.Fatalf("retried snapshot %d does not sit on the other writer's snapshot %d", mineID, otherID)
	}
	requireTableMatchesModel(t, mine)

	// Nothing of the other writer's snapshot is lost: the live rows after
	// mine are the other writer's live rows plus my inserts minus my deletes.
	atOther, err := scanOrders(ctx, tbl, table.WithSnapshotID(otherID))
	if err != nil {
		t.Fatal(err)
	}
	requireSameOrders(t, atOther, other.Expected())
	inserts, deletes := summaryInt(t, snap, SummaryInserts), summaryInt(t, snap, SummaryDeletes)
	if got, want := len(mine.Expected()), len(atOther)+inserts-deletes; got != want {
		t.Errorf("live orders after retry %d, want %d (= %d + %d inserts - %d deletes)",
			got, want, len(atOther), inserts, deletes)
	}

	requireNoOrphanFiles(t, tbl)

	// Both writers keep working; each notices the other's commits.
	steps(t, other, 1)
	steps(t, mine, 1)
	requireTableMatchesModel(t, mine)
}

func summaryInt(t *testing.T, snap *table.Snapshot, key string) int {
	t.Helper()
	v, err := strconv.Atoi(snap.Summary.Properties[key])
	if err != nil {
		t.Fatalf("snapshot %d summary %s: %v", snap.SnapshotID, key, err)
	}
	return v
}

// requireNoOrphanFiles checks that every Parquet file under the table's
// location is referenced by some snapshot: the files of the attempt that lost
// the race must have been removed.
func requireNoOrphanFiles(t *testing.T, tbl *table.Table) {
	t.Helper()
	fsys, err := tbl.FS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	referenced := make(map[string]bool)
	for _, snap := range tbl.Metadata().Snapshots() {
		manifests, err := snap.Manifests(fsys)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range manifests {
			entries, err := icefiles.ManifestEntries(fsys, m, false)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				referenced[strings.TrimPrefix(e.DataFile().FilePath(), "file://")] = true
			}
		}
	}
	root := strings.TrimPrefix(tbl.Location(), "file://")
	err = filepath.WalkDir(root, func(path string, de fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if strings.HasSuffix(path, ".parquet") && !referenced[path] {
			t.Errorf("orphan file %s", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// racingCatalog lets another writer commit inside the first CommitTable call
// and then reports a clean conflict (table.ErrCommitFailed), the way a
// catalog does when it loses a compare-and-swap. With retries enabled on the
// table, that is the case where iceberg-go would replay the commit onto the
// new head by itself.
type racingCatalog struct {
	catalog.Catalog
	race  func(ctx context.Context) error
	raced bool
}

// LoadTable binds the table to the wrapper, so that the transaction commits
// through it rather than through the wrapped catalog.
func (c *racingCatalog) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	tbl, err := c.Catalog.LoadTable(ctx, ident)
	if err != nil {
		return nil, err
	}
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), tbl.FS, c), nil
}

func (c *racingCatalog) CommitTable(ctx context.Context, ident table.Identifier, reqs []table.Requirement, updates []table.Update) (table.Metadata, string, error) {
	if !c.raced {
		c.raced = true
		if err := c.race(ctx); err != nil {
			return nil, "", err
		}
		return nil, "", fmt.Errorf("%w: simulated lost compare-and-swap", table.ErrCommitFailed)
	}
	return c.Catalog.CommitTable(ctx, ident, reqs, updates)
}

// TestCommitIsNotReplayedBlindly checks that iceberg-go's own retry does not
// commit a plan made against a stale head: both writers pick the next order
// id and may update the same order, so a blind replay would leave duplicate
// keys. The demo must replan instead.
func TestCommitIsNotReplayedBlindly(t *testing.T) {
	ctx := context.Background()
	base, _ := openTestCatalog(t)
	other := newTestDemo(t, base, 99)
	steps(t, other, 2)
	// iceberg-go retries a failed commit itself only when the table asks
	// for it; its default is no retries.
	tbl, err := base.LoadTable(ctx, DefaultTable())
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.SetProperties(iceberg.Properties{table.CommitNumRetriesKey: "2"}); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}

	var otherID int64
	racing := &racingCatalog{Catalog: base, race: func(ctx context.Context) error {
		var err error
		otherID, err = other.Step(ctx)
		return err
	}}
	mine := newTestDemo(t, racing, 42)
	attempts := 0
	mine.beforeCommit = func(context.Context) error { attempts++; return nil }
	mineID, err := mine.Step(ctx)
	if err != nil {
		t.Fatalf("step through a racing catalog: %v", err)
	}
	if attempts != 2 {
		t.Fatalf("demo made %d commit attempts, want 2 (conflict, then a replanned commit)", attempts)
	}
	tbl, err = base.LoadTable(ctx, DefaultTable())
	if err != nil {
		t.Fatal(err)
	}
	snap := tbl.SnapshotByID(mineID)
	if snap == nil || snap.ParentSnapshotID == nil || *snap.ParentSnapshotID != otherID {
		t.Fatalf("snapshot %d does not sit on the other writer's %d", mineID, otherID)
	}
	if mine.model.snapshotID != mineID {
		t.Fatalf("model describes snapshot %d, want %d", mine.model.snapshotID, mineID)
	}
	requireTableMatchesModel(t, mine)
	requireNoOrphanFiles(t, tbl)
	steps(t, mine, 2)
	requireTableMatchesModel(t, mine)
}
