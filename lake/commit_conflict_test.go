package lake

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"
)

// A commit that loses the race to another writer leaves nothing in
// metadata/: its staged manifest list and manifest are removed at once
// (they were orphans for the hourly orphan cleanup), while everything the
// winner and the older snapshots reference stays. The same staging on the
// new head commits.
func TestCommitOrCleanRemovesTheStagedFilesOfALostCommit(t *testing.T) {
	ctx := context.Background()
	cat, ident := pointerTable(t, t.TempDir(), 2)
	load := func() *table.Table {
		tbl, err := cat.LoadTable(ctx, ident)
		if err != nil {
			t.Fatal(err)
		}
		return tbl
	}
	stage := func(base *table.Table, id int64) (*table.Transaction, []string) {
		tx := base.NewTransaction()
		if err := tx.AssertRefSnapshotID(table.MainBranch); err != nil {
			t.Fatal(err)
		}
		if err := tx.AppendTable(ctx, oneRow(t, id), 10, nil); err != nil {
			t.Fatal(err)
		}
		files, err := stagedMetadataFiles(ctx, base, tx)
		if err != nil || len(files) < 2 {
			t.Fatalf("staged metadata files %v (%v), want a manifest list and a manifest", files, err)
		}
		return tx, files
	}

	base := load()
	loser, lost := stage(base, 100)
	winner, _ := stage(load(), 200)
	if _, err := CommitOrClean(ctx, load(), winner); err != nil {
		t.Fatal(err)
	}
	_, err := CommitOrClean(ctx, base, loser)
	if !IsCommitConflict(err) {
		t.Fatalf("the stale commit: %v, want a commit conflict", err)
	}
	for _, f := range lost {
		if _, err := os.Stat(strings.TrimPrefix(f, "file://")); !os.IsNotExist(err) {
			t.Errorf("staged file of the lost commit %s still there (%v)", f, err)
		}
	}
	assertReferencedFilesExist(t, load())

	retry, kept := stage(load(), 100)
	if _, err := CommitOrClean(ctx, load(), retry); err != nil {
		t.Fatal(err)
	}
	for _, f := range kept {
		if _, err := os.Stat(strings.TrimPrefix(f, "file://")); err != nil {
			t.Errorf("staged file of a commit that landed: %v", err)
		}
	}
	assertReferencedFilesExist(t, load())
}

// oneRow is a table of one id for pointerSchema.
func oneRow(t *testing.T, id int64) arrow.Table {
	t.Helper()
	sc, err := table.SchemaToArrowSchema(pointerSchema, nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).Append(id)
	rec := b.NewRecordBatch()
	defer rec.Release()
	at := array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
	t.Cleanup(at.Release)
	return at
}

// assertReferencedFilesExist checks that the manifest list and every
// manifest of every snapshot of tbl exist.
func assertReferencedFilesExist(t *testing.T, tbl *table.Table) {
	t.Helper()
	fsys, err := tbl.FS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range tbl.Metadata().Snapshots() {
		mans, err := s.Manifests(fsys)
		if err != nil {
			t.Fatalf("snapshot %d: %v", s.SnapshotID, err)
		}
		for _, m := range mans {
			if _, err := os.Stat(strings.TrimPrefix(m.FilePath(), "file://")); err != nil {
				t.Errorf("snapshot %d: manifest %v", s.SnapshotID, err)
			}
		}
	}
}
