package maintain_test

import (
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/lakegw/lakegw/lake"
	"github.com/lakegw/lakegw/maintain"
	"github.com/lakegw/lakegw/quickstart"
)

// TestManifestCacheAnswersWithoutTheFiles reads a snapshot's manifest list
// and manifests through the cache, moves the files away, and asks again:
// the cache answers as the files did, while a fresh cache cannot. This is
// what lets a pass of a streaming table skip the files an earlier pass read.
func TestManifestCacheAnswersWithoutTheFiles(t *testing.T) {
	ctx := context.Background()
	cat, err := lake.OpenCatalog(ctx, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	d := quickstart.NewDemo(cat, zerolog.Nop(), quickstart.DemoOptions{Seed: 3})
	if _, err := d.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := d.Step(ctx); err != nil {
			t.Fatal(err)
		}
	}
	tbl, err := cat.LoadTable(ctx, quickstart.DefaultTable())
	if err != nil {
		t.Fatal(err)
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	snap := *tbl.CurrentSnapshot()
	cache := maintain.NewManifestCache(1 << 20)
	mans, err := cache.Manifests(fsys, snap)
	if err != nil {
		t.Fatal(err)
	}
	if len(mans) == 0 {
		t.Fatal("the demo's current snapshot lists no manifest")
	}
	want := map[string][]string{}
	for _, m := range mans {
		for _, live := range []bool{true, false} {
			paths, err := cache.EntryPaths(fsys, m, live)
			if err != nil {
				t.Fatal(err)
			}
			if len(paths) == 0 && live {
				// Every manifest of the current snapshot lists a live file.
				t.Fatalf("manifest %s: no live entry", m.FilePath())
			}
			want[key(m.FilePath(), live)] = paths
		}
	}

	moved := append([]string{snap.ManifestList}, pathsOf(mans)...)
	for _, p := range moved {
		local := strings.TrimPrefix(p, "file://")
		if err := os.Rename(local, local+".away"); err != nil {
			t.Fatal(err)
		}
	}
	again, err := cache.Manifests(fsys, snap)
	if err != nil {
		t.Fatalf("cached manifest list: %v", err)
	}
	if !slices.Equal(pathsOf(again), pathsOf(mans)) {
		t.Fatalf("cached manifest list %v, read %v", pathsOf(again), pathsOf(mans))
	}
	for _, m := range again {
		for _, live := range []bool{true, false} {
			paths, err := cache.EntryPaths(fsys, m, live)
			if err != nil {
				t.Fatalf("cached entries: %v", err)
			}
			if !slices.Equal(paths, want[key(m.FilePath(), live)]) {
				t.Fatalf("manifest %s (live %v): cached %v, read %v", m.FilePath(), live, paths, want[key(m.FilePath(), live)])
			}
		}
	}
	if _, err := maintain.NewManifestCache(1<<20).Manifests(fsys, snap); err == nil {
		t.Fatal("a fresh cache read a manifest list that was moved away: the test proves nothing")
	}
}

func key(path string, live bool) string {
	if live {
		return "live " + path
	}
	return "all " + path
}

func pathsOf[M interface{ FilePath() string }](ms []M) []string {
	out := make([]string, len(ms))
	for i, m := range ms {
		out[i] = m.FilePath()
	}
	return out
}
