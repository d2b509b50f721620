package derive

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/lakegw/lakegw/changelog"
	"github.com/lakegw/lakegw/lake"
	icefiles "github.com/lakegw/lakegw/lake/files"
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
	hist, err := changelog.MainHistory(tbl.Metadata())
	if err != nil {
		t.Fatal(err)
	}
	path := firstDataFile(t, tbl, hist[0].SnapshotID)
	// The copy: the whole table copied elsewhere and read with its
	// location remapped there, its data file replaced by bytes that are
	// not Parquet at all.
	root := localPath(tbl.Location())
	copyRoot := t.TempDir()
	copyTree(t, root, copyRoot)
	rel, err := filepath.Rel(root, path)
	if err != nil {
		t.Fatal(err)
	}
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(copyRoot, rel), make([]byte, len(orig)), 0o600); err != nil {
		t.Fatal(err)
	}
	metaRel, err := filepath.Rel(root, localPath(tbl.MetadataLocation()))
	if err != nil {
		t.Fatal(err)
	}
	cp, err := lake.OpenTableAt(ctx, tbl.Identifier(), filepath.Join(copyRoot, metaRel), nil,
		[]lake.Remap{{From: root, To: copyRoot}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := Derive(ctx, tbl, hist[0], Options{})
	if err != nil {
		t.Fatal(err)
	}
	c.Release()
	cfs, err := cp.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ms, err := cp.Metadata().SnapshotByID(hist[0].SnapshotID).Manifests(cfs)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := icefiles.ManifestEntries(cfs, ms[0], true)
	if err != nil {
		t.Fatal(err)
	}
	if filesChecked.has(checkedKeyOf(cfs, entries[0].DataFile())) {
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

// copyTree copies the files below src to dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o700)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// The checked set stays within its capacity, forgets first the keys not
// looked up since the clock hand last passed, and holds nothing the
// collector must trace.
func TestCheckedSetBoundedClockWithoutPointers(t *testing.T) {
	key := func(i int) checkedKey {
		return checkedKey{location: hashLocation(fmt.Sprint("file-", i)), size: int64(i)}
	}
	s := newCheckedSet(4)
	for i := range 4 {
		s.add(key(i))
	}
	if !s.has(key(0)) || !s.has(key(2)) {
		t.Fatal("a key added is not there")
	}
	s.add(key(4)) // the hand passes 0 (looked up), takes 1's slot
	s.add(key(5)) // passes 2, takes 3's slot
	for i, want := range []bool{true, false, true, false, true, true} {
		if got := s.has(key(i)); got != want {
			t.Fatalf("key %d: has %v, want %v", i, got, want)
		}
	}
	for i := range 1000 {
		s.add(key(100 + i))
	}
	if len(s.at) != 4 || !s.has(key(1099)) {
		t.Fatalf("%d keys held for a capacity of 4", len(s.at))
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[checkedKey](), reflect.TypeFor[checkedSlot](), reflect.TypeFor[int32]()} {
		if hasPointers(typ) {
			t.Fatalf("%v holds pointers: the collector would trace every entry", typ)
		}
	}
}

func hasPointers(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.String, reflect.Interface, reflect.Chan, reflect.Func, reflect.UnsafePointer:
		return true
	case reflect.Array:
		return hasPointers(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if hasPointers(t.Field(i).Type) {
				return true
			}
		}
	}
	return false
}
