package lsm

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/apache/iceberg-go/table"
	"golang.org/x/sync/errgroup"
)

// keysInBucket returns n ids whose bucket is b.
func keysInBucket(t *testing.T, tb *Table, b, n int) []int64 {
	t.Helper()
	_, sp, err := tb.load(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var out []int64
	for id := int64(0); len(out) < n; id++ {
		bs, err := bucketsOf(sp, []Row{{id, nil, nil, nil}})
		if err != nil {
			t.Fatal(err)
		}
		if bs[0] == b {
			out = append(out, id)
		}
	}
	return out
}

// TestLsmConcurrentWriters: two writers (separate Table handles, as two
// processes would have) add +1 to counters with the sum aggregation, on
// different buckets and on the same bucket. Every increment must land
// exactly once (no lost update, no double apply), the scan must have one
// row per key, and the changelog must replay to the table; on v2 and v3.
func TestLsmConcurrentWriters(t *testing.T) {
	for _, version := range formatVersions {
		for _, mode := range []string{"different-buckets", "same-bucket"} {
			t.Run(fmt.Sprintf("v%d/%s", version, mode), func(t *testing.T) { testConcurrentWriters(t, version, mode) })
		}
	}
}

func testConcurrentWriters(t *testing.T, version int, mode string) {
	ctx := context.Background()
	cat := testCatalog(t, t.TempDir())
	name := "conc_" + map[string]string{"different-buckets": "diff", "same-bucket": "same"}[mode]
	ident := table.Identifier{"ns", name}
	opts := Options{MaxCommitAttempts: 100}
	tb := createTestTable(t, cat, name, CreateOptions{Buckets: 2, MergeEngine: EngineAggregation,
		Aggregates: map[string]string{"qty": "sum", "price": "max"}, FormatVersion: version}, opts)
	var keys [2][]int64
	if mode == "same-bucket" {
		k := keysInBucket(t, tb, 0, 6)
		keys = [2][]int64{k, k}
	} else {
		keys = [2][]int64{keysInBucket(t, tb, 0, 6), keysInBucket(t, tb, 1, 6)}
	}
	const commits = 8
	var mu sync.Mutex
	var snaps []int64
	attempts := 0
	g, gctx := errgroup.WithContext(ctx)
	for wi := 0; wi < 2; wi++ {
		g.Go(func() error {
			h, err := Open(gctx, cat, ident, opts)
			if err != nil {
				return err
			}
			for c := 0; c < commits; c++ {
				w, err := h.NewWriter(gctx)
				if err != nil {
					return err
				}
				for _, id := range keys[wi] {
					if err := w.Upsert(map[string]any{"id": id, "name": fmt.Sprint("w", wi), "qty": int64(1), "price": float64(c)}); err != nil {
						return err
					}
				}
				res, err := w.Commit(gctx)
				if err != nil {
					return fmt.Errorf("writer %d commit %d: %w", wi, c, err)
				}
				mu.Lock()
				snaps = append(snaps, res.SnapshotID)
				attempts += res.Attempts
				mu.Unlock()
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatal(err)
	}
	want := map[int64]int64{}
	for wi := range 2 {
		for _, id := range keys[wi] {
			want[id] += commits
		}
	}
	got := scanRows(t, cat, ident)
	if len(got) != len(want) {
		t.Fatalf("scan has %d keys, want %d: %v", len(got), len(want), got)
	}
	for id, n := range want {
		row := got[fmt.Sprint(id)]
		var qty int64
		var price float64
		parts := splitRow(row)
		if len(parts) != 4 {
			t.Fatalf("key %d: row %q", id, row)
		}
		fmt.Sscan(parts[2], &qty)
		fmt.Sscan(parts[3], &price)
		if qty != n {
			t.Fatalf("key %d: qty %d, want %d (lost or doubled increments): %s", id, qty, n, row)
		}
		if price != commits-1 {
			t.Fatalf("key %d: max price %v, want %d", id, price, commits-1)
		}
	}
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	// The changelog of every snapshot, in history order, replays to the
	// iceberg-go scan of that snapshot, and every snapshot has the delete
	// files of its format version (at most one live DV per data file on
	// v3).
	replay := map[string]string{}
	hist := historyIDs(t, tbl)
	dvSnaps := 0
	for _, id := range hist {
		replayChanges(t, tbl, id, replay)
		if scan := scanRowsAt(t, tbl, id); fmt.Sprint(scan) != fmt.Sprint(replay) {
			t.Fatalf("snapshot %d: scan %v\nreplay %v", id, scan, replay)
		}
		if checkDeleteLayoutAt(t, tbl, tbl.SnapshotByID(id), version).dvs > 0 {
			dvSnaps++
		}
	}
	if fmt.Sprint(replay) != fmt.Sprint(got) {
		t.Fatalf("replay %v\nscan %v", replay, got)
	}
	if version == 3 && dvSnaps == 0 {
		t.Fatal("no v3 snapshot has a deletion vector")
	}
	layout := checkDeleteLayout(t, cat, ident, version)
	t.Logf("%s: %d commits in %d attempts; %d DVs, %d position delete files live", mode, len(snaps), attempts, layout.dvs, layout.posDeleteFiles)
}

func splitRow(s string) []string {
	var parts []string
	start := 0
	for i := range s {
		if s[i] == '|' {
			parts = append(parts, s[start:i])
			start = i + 1
		}
	}
	return append(parts, s[start:])
}
