package derive

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"strings"
	"testing"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	icefiles "github.com/lakegw/lakegw/lake/files"

	"github.com/lakegw/lakegw/changelog"
)

// localPath turns a file: location of the test warehouse into a path.
func localPath(loc string) string {
	return strings.TrimPrefix(strings.TrimPrefix(loc, "file://"), "file:")
}

// TestDeriveDamagedNamesMissingFile removes, in turn, a data file, a manifest
// and a manifest list of a table written by the test: deriving the snapshot
// that needs the file fails with an error naming it.
func TestDeriveDamagedNamesMissingFile(t *testing.T) {
	ctx := context.Background()
	setup := func(t *testing.T) (*table.Table, []changelog.SnapshotRef) {
		cat := newTestCatalog(t)
		tbl := createTable(t, cat, "damaged", testSchema())
		tbl = appendJSON(t, tbl, jsonRows(0, 10), 4) // three files read at once
		tbl = appendJSON(t, tbl, jsonRows(10, 20), 0)
		tbl = deleteWhere(t, tbl, idIn(3, 7, 9)) // copy-on-write: rewrites all three files
		hist, err := changelog.MainHistory(tbl.Metadata())
		if err != nil {
			t.Fatal(err)
		}
		return tbl, hist
	}
	check := func(t *testing.T, tbl *table.Table, snap changelog.SnapshotRef, missing string) {
		t.Helper()
		c, err := Derive(ctx, tbl, snap, Options{})
		if err == nil {
			c.Release()
			t.Fatalf("derivation succeeded without %s", missing)
		}
		if !strings.Contains(err.Error(), missing) {
			t.Fatalf("error does not name %s: %v", missing, err)
		}
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("error does not wrap fs.ErrNotExist: %v", err)
		}
		t.Log(err)
	}
	t.Run("data file", func(t *testing.T) {
		tbl, hist := setup(t)
		fs, _ := tbl.FS(ctx)
		s := tbl.Metadata().SnapshotByID(hist[0].SnapshotID)
		ms, err := s.Manifests(fs)
		if err != nil {
			t.Fatal(err)
		}
		entries, err := icefiles.ManifestEntries(fs, ms[0], true)
		if err != nil {
			t.Fatal(err)
		}
		sortEntries(entries)
		path := entries[1].DataFile().FilePath()
		if err := os.Remove(localPath(path)); err != nil {
			t.Fatal(err)
		}
		check(t, tbl, hist[0], path) // the append reads it
		check(t, tbl, hist[2], path) // the rewrite reads its before-image
		// The second append does not need it.
		c, err := Derive(ctx, tbl, hist[1], Options{})
		if err != nil {
			t.Fatalf("unaffected snapshot: %v", err)
		}
		c.Release()
	})
	t.Run("manifest", func(t *testing.T) {
		tbl, hist := setup(t)
		fs, _ := tbl.FS(ctx)
		s := tbl.Metadata().SnapshotByID(hist[1].SnapshotID)
		ms, err := s.Manifests(fs)
		if err != nil {
			t.Fatal(err)
		}
		var path string
		for _, m := range ms {
			if m.SnapshotID() == hist[1].SnapshotID {
				path = m.FilePath()
			}
		}
		if err := os.Remove(localPath(path)); err != nil {
			t.Fatal(err)
		}
		check(t, tbl, hist[1], path)
	})
	t.Run("manifest list", func(t *testing.T) {
		tbl, hist := setup(t)
		path := tbl.Metadata().SnapshotByID(hist[1].SnapshotID).ManifestList
		if err := os.Remove(localPath(path)); err != nil {
			t.Fatal(err)
		}
		check(t, tbl, hist[1], path)
		check(t, tbl, hist[2], path) // its parent state is needed
	})
}

// TestDerivePanickingManifestIsContained: a manifest whose decoding panics
// (here its reads panic, as a decoder on damaged bytes may) is read by
// iceberg-go's planner in goroutines of its own, where the panic would end
// the process. Deriving a snapshot that plans over it (a copy-on-write
// delete, whose before-images need its parent's plan) fails with an error
// naming the manifest, and the process lives.
func TestDerivePanickingManifestIsContained(t *testing.T) {
	ctx := context.Background()
	cat := newTestCatalog(t)
	tbl := createTable(t, cat, "panicking", testSchema())
	tbl = appendJSON(t, tbl, jsonRows(0, 10), 4)
	tbl = appendJSON(t, tbl, jsonRows(10, 20), 0)
	tbl = deleteWhere(t, tbl, idIn(3, 7, 9))
	hist, err := changelog.MainHistory(tbl.Metadata())
	if err != nil {
		t.Fatal(err)
	}
	real, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := tbl.Metadata().SnapshotByID(hist[0].SnapshotID).Manifests(real)
	if err != nil {
		t.Fatal(err)
	}
	path := ms[0].FilePath()
	panicking := table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(),
		func(context.Context) (icebergio.IO, error) { return panickingIO{IO: real, name: path}, nil }, nil)
	c, err := Derive(ctx, panicking, hist[2], Options{})
	if err == nil {
		c.Release()
		t.Fatal("derivation over a manifest whose decoding panics succeeded")
	}
	if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "panic") {
		t.Fatalf("error does not name the manifest and its panic: %v", err)
	}
	t.Log(err)
}

// panickingIO is an IO whose file name panics when read.
type panickingIO struct {
	icebergio.IO
	name string
}

func (p panickingIO) Open(name string) (icebergio.File, error) {
	f, err := p.IO.Open(name)
	if err != nil || name != p.name {
		return f, err
	}
	return panickingFile{f}, nil
}

type panickingFile struct{ icebergio.File }

func (panickingFile) Read([]byte) (int, error)          { panic("decoder fault") }
func (panickingFile) ReadAt([]byte, int64) (int, error) { panic("decoder fault") }
