package changelog

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lakegw/lakegw/lake"
)

// TestCheckedFilesKeyedByLocation: two copies of a table record the same
// file names; a check of the healthy copy's file must not vouch for the
// damaged copy's (it did, in the e2e test of issue 12, row 1, and the
// damaged file reached iceberg-go's scanner goroutines).
func TestCheckedFilesKeyedByLocation(t *testing.T) {
	ctx := context.Background()
	filesChecked.forget()
	cat := newTestCatalog(t)
	tbl := createTable(t, cat, "copies", hostileSchema())
	tbl = appendJSON(t, tbl, hostileRows(0, 50), 0)
	hist, err := MainHistory(tbl.Metadata())
	if err != nil {
		t.Fatal(err)
	}
	path := firstDataFile(t, tbl, hist[0].SnapshotID)
	// The copy: the same metadata, read with the data folder remapped
	// to a damaged copy of it.
	dataDir := filepath.Dir(path)
	copyDir := t.TempDir()
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	bad := make([]byte, len(orig)) // not Parquet at all
	copyPath := filepath.Join(copyDir, filepath.Base(path))
	if err := os.WriteFile(copyPath, bad, 0o600); err != nil {
		t.Fatal(err)
	}
	cp, err := lake.OpenTableAt(ctx, tbl.Identifier(), localPath(tbl.MetadataLocation()), nil,
		[]lake.Remap{{From: dataDir, To: copyDir}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := Derive(ctx, tbl, hist[0], Options{})
	if err != nil {
		t.Fatal(err)
	}
	c.Release()
	fs, err := cp.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := cp.Metadata().SnapshotByID(hist[0].SnapshotID).Manifests(fs)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := ms[0].FetchEntries(fs, true)
	if err != nil {
		t.Fatal(err)
	}
	if filesChecked.has(checkedKeyOf(fs, entries[0].DataFile())) {
		t.Fatal("the check of the healthy file vouches for the damaged copy")
	}
	c, err = Derive(ctx, cp, hist[0], Options{})
	if err == nil {
		c.Release()
		t.Fatal("the damaged copy derived without error")
	}
	if !strings.Contains(err.Error(), filepath.Base(path)) {
		t.Errorf("error does not name the file: %v", err)
	}
}
