package lsm

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/iceberg-go/table"
)

// A v2 table upgraded to v3: the first DV of a data file that already has
// position deletes holds their positions too (readers ignore position
// deletes once a file has a DV), and compaction removes the shadowed
// position delete files with their data file.
func TestLsmUpgradeV2ToV3(t *testing.T) {
	ctx := context.Background()
	cat := testCatalog(t, t.TempDir())
	ident := table.Identifier{"ns", "upgrade"}
	tb := createTestTable(t, cat, "upgrade", CreateOptions{Buckets: 1}, Options{})
	want := map[string]string{}
	commit := func(ids []int64, name string) {
		t.Helper()
		w, err := tb.NewWriter(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range ids {
			if err := w.Upsert(map[string]any{"id": id, "name": name}); err != nil {
				t.Fatal(err)
			}
			want[fmt.Sprint(id)] = fmt.Sprintf("%d|%s|null|null", id, name)
		}
		if _, err := w.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		if got := scanRows(t, cat, ident); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Fatalf("scan %v\nwant %v", got, want)
		}
		for _, id := range []int64{0, 3, 6, 9} {
			row, ok, err := tb.Get(ctx, map[string]any{"id": id})
			if err != nil || !ok || renderMap(row) != want[fmt.Sprint(id)] {
				t.Fatalf("get %d = %v %v %v, want %s", id, row, ok, err, want[fmt.Sprint(id)])
			}
		}
	}
	commit([]int64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, "a")
	commit([]int64{0, 1, 2}, "b") // position deletes on the first run
	if l := checkDeleteLayout(t, cat, ident, 2); l.posDeleteFiles != 1 {
		t.Fatalf("v2: %+v", l)
	}
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.UpgradeFormatVersion(3); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	commit([]int64{3, 4}, "c") // the first run's DV: positions 0-4
	commit([]int64{0, 5}, "d") // DVs of both older runs
	tbl, _ = cat.LoadTable(ctx, ident)
	checkDeleteLayoutAt(t, tbl, nil, 3) // the format version only
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	dvs := 0
	for _, task := range tasks {
		if len(task.DeleteFiles) > 0 {
			t.Fatalf("%s: position deletes applied next to a DV", task.File.FilePath())
		}
		dvs += len(task.DeletionVectorFiles)
	}
	if dvs != 2 {
		t.Fatalf("%d DVs planned, want 2 (the two older runs)", dvs)
	}
	res, err := tb.Compact(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	// Two DVs and the shadowed position delete file of the first run.
	if res.DeleteFilesDropped != 3 {
		t.Fatalf("compaction dropped %d delete files, want 3: %+v", res.DeleteFilesDropped, res)
	}
	if l := checkDeleteLayout(t, cat, ident, 3); l.dvs+l.posDeleteFiles != 0 {
		t.Fatalf("after compaction: %+v", l)
	}
	if got := scanRows(t, cat, ident); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("after compaction: scan %v\nwant %v", got, want)
	}
	commit([]int64{9}, "e")
	if l := checkDeleteLayout(t, cat, ident, 3); l.dvs != 1 {
		t.Fatalf("after a commit on the compacted v3 table: %+v", l)
	}
}
