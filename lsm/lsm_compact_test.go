package lsm

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/iceberg-go/table"
)

// A compaction whose inputs hold only deleted rows writes no file; its
// snapshot must still be a row-less replace, with no change events.
func TestLsmCompactionOfDeletedRows(t *testing.T) {
	ctx := context.Background()
	cat := testCatalog(t, t.TempDir())
	tb := createTestTable(t, cat, "alldel", CreateOptions{Buckets: 1}, Options{})
	w, _ := tb.NewWriter(ctx)
	for i := int64(0); i < 3; i++ {
		if err := w.Upsert(map[string]any{"id": i, "name": "x"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for i := int64(0); i < 3; i++ {
		if err := w.Delete(map[string]any{"id": i}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	cr, err := tb.Compact(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	if cr.SnapshotID == 0 || cr.FilesOut != 0 {
		t.Fatalf("compaction %+v", cr)
	}
	tbl, _ := cat.LoadTable(ctx, table.Identifier{"ns", "alldel"})
	s := tbl.CurrentSnapshot()
	t.Logf("operation %s summary %v", s.Summary.Operation, s.Summary.Properties)
	if ev := deriveEvents(t, tbl, s.SnapshotID); len(ev) != 0 {
		t.Fatalf("events %q", ev)
	}
	if got := scanRows(t, cat, table.Identifier{"ns", "alldel"}); len(got) != 0 {
		t.Fatalf("scan %v", got)
	}
}

// Universal compaction picking, Paimon's rules.
func TestLsmCompactionPick(t *testing.T) {
	o := CompactionOptions{}.withDefaults()
	run := func(level int, size int64) sortedRun { return sortedRun{level: level, size: size} }
	// Fewer runs than the trigger: nothing.
	if u := o.pick([]sortedRun{run(0, 1), run(0, 1), run(5, 100)}, false); u != nil {
		t.Fatalf("picked %+v", u)
	}
	// Size amplification: 4 small L0 over a large oldest run: no; over
	// a small one: everything to the max level.
	if u := o.pick([]sortedRun{run(0, 10), run(0, 10), run(0, 10), run(0, 10), run(5, 1000)}, false); u == nil || len(u.runs) != 4 || u.level != 4 {
		t.Fatalf("size ratio pick %+v", u)
	}
	if u := o.pick([]sortedRun{run(0, 100), run(0, 100), run(0, 100), run(0, 100), run(5, 100)}, false); u == nil || len(u.runs) != 5 || u.level != 5 {
		t.Fatalf("size amplification pick %+v", u)
	}
	// Run count: sizes growing too fast for the ratio, 6 runs: the
	// newest 2 merge, into the level under the next non-L0 run.
	if u := o.pick([]sortedRun{run(0, 1), run(0, 4), run(0, 40), run(0, 400), run(4, 4000), run(5, 40000)}, false); u == nil || len(u.runs) != 4 || u.level != 3 {
		t.Fatalf("run count pick %+v", u)
	}
}

// TestLsmCompactionForgetsReplacedFiles: a Table that lives long (serve's
// compactor keeps one per table) caches the runs and deletes it reads;
// what a compaction replaced leaves the cache with the commit, so the
// cache holds the table's live files, not every file since it opened.
func TestLsmCompactionForgetsReplacedFiles(t *testing.T) {
	ctx := context.Background()
	cat := testCatalog(t, t.TempDir())
	tb := createTestTable(t, cat, "forget", CreateOptions{Buckets: 2}, Options{})
	for round := range 6 {
		for c := range 4 {
			w, err := tb.NewWriter(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for k := range int64(20) {
				if err := w.Upsert(map[string]any{"id": k, "name": fmt.Sprint(round, "/", c)}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := w.Commit(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := tb.Compact(ctx, true); err != nil {
			t.Fatal(err)
		}
		// A full compaction leaves one run per bucket and no deletes:
		// what the cache may still hold is those runs.
		if n := tb.cache.len(); n > 2 {
			t.Fatalf("after compaction %d the file cache holds %d entries for 2 live runs", round, n)
		}
	}
}

// TestLsmCompactorDropsFilesOthersReplaced: serve's compactor keeps a Table
// of its own while the writer's process compacts too; the runs the
// writer's compactions replaced leave the compactor's cache at its next
// pass, which then holds only the head's live files.
func TestLsmCompactorDropsFilesOthersReplaced(t *testing.T) {
	ctx := context.Background()
	cat := testCatalog(t, t.TempDir())
	writer := createTestTable(t, cat, "others", CreateOptions{Buckets: 2}, Options{})
	compactor, err := Open(ctx, cat, writer.ident, Options{})
	if err != nil {
		t.Fatal(err)
	}
	commits := func(round, n int) {
		t.Helper()
		for c := range n {
			w, err := writer.NewWriter(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for k := range int64(20) {
				if err := w.Upsert(map[string]any{"id": k, "name": fmt.Sprint(round, "/", c)}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := w.Commit(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	for round := range 4 {
		commits(round, 5)
		// The compactor merges (and caches) the runs of this round...
		if res, err := compactor.Compact(ctx, false); err != nil {
			t.Fatal(err)
		} else if res.SnapshotID == 0 {
			t.Fatalf("round %d: the compactor found nothing to compact", round)
		}
		// ...which the writer's full compaction then replaces, with
		// the runs committed since.
		commits(round, 2)
		if _, err := writer.Compact(ctx, true); err != nil {
			t.Fatal(err)
		}
	}
	tbl, sp, err := compactor.load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st, err := loadState(ctx, tbl, sp, nil)
	if err != nil {
		t.Fatal(err)
	}
	live := st.cacheKeys()
	stale := func() (n int) {
		compactor.cache.mu.Lock()
		defer compactor.cache.mu.Unlock()
		for k := range compactor.cache.items {
			if !live[k] {
				n++
			}
		}
		return n
	}
	if stale() == 0 {
		t.Fatal("the writer's compactions left nothing stale in the compactor's cache: the test exercises nothing")
	}
	if _, err := compactor.Compact(ctx, false); err != nil {
		t.Fatal(err)
	}
	if n := stale(); n > 0 {
		t.Fatalf("after its pass the compactor's cache holds %d entries of files no longer live", n)
	}
}
