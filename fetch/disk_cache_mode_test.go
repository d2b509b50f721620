package fetch

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"
)

// Batch-cache segments hold table rows: directory 0700, segments 0600 (they
// were 0644 in a 0755 directory).
func TestDiskCacheFilesAreOwnerOnly(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "batch-cache")
	d, err := newDiskCache(dir, 4<<20, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer d.close()
	var k batchKey
	if !d.add(k, []byte("rows")) {
		t.Fatal("the batch was not cached")
	}
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("cache dir: %v, %v; want 0700", st.Mode(), err)
	}
	segs, err := filepath.Glob(filepath.Join(dir, "*.batches"))
	if err != nil || len(segs) == 0 {
		t.Fatalf("no segment files: %v", err)
	}
	for _, s := range segs {
		if st, err := os.Stat(s); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, %v; want 0600", s, st.Mode(), err)
		}
	}
}
