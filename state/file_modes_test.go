package state

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// A new store is owner-only: directory 0700, database, -wal and -shm 0600
// (they were 0644 in a 0755 directory).
func TestOpenCreatesPrivateFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	path := filepath.Join(dir, "state.db")
	openAndWrite(t, path)
	wantMode(t, dir, 0o700)
	for _, f := range []string{path, path + "-wal", path + "-shm"} {
		wantMode(t, f, 0o600)
	}
}

// An existing store others may read (an older lakegw left it 0644, its
// -wal and -shm too) keeps working and is made owner-only.
func TestOpenMakesAnExistingStorePrivate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state.db")
	openAndWrite(t, path)
	for _, f := range []string{path, path + "-wal", path + "-shm"} {
		if err := os.Chmod(f, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	openAndWrite(t, path)
	for _, f := range []string{path, path + "-wal", path + "-shm"} {
		wantMode(t, f, 0o600)
	}
}

// openAndWrite opens the store at path and commits a row, leaving it open
// (with its -wal and -shm files) until the test ends.
func openAndWrite(t *testing.T, path string) {
	t.Helper()
	ctx := context.Background()
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.RegisterTable(ctx, RegisteredTable{Ident: "ns.t", MetadataLocation: "/m.json"}); err != nil {
		t.Fatal(err)
	}
}

func wantMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Mode().Perm(); got != want {
		t.Errorf("%s: mode %#o, want %#o", path, got, want)
	}
}
