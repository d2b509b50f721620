package maintain_test

import (
	"context"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/lake"
	"github.com/lakegw/lakegw/maintain"
)

// TestLiveFileCountsBoundThePlanners checks the counts a compaction pass
// decides from without reading a manifest against iceberg-go's planner,
// snapshot by snapshot of a merge-on-read history: the data files are the
// planner's exactly, the delete files never fewer. A skip decided on them
// is the one the planner's counts would decide.
func TestLiveFileCountsBoundThePlanners(t *testing.T) {
	ctx := context.Background()
	cat, err := lake.OpenCatalog(ctx, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ident := idsTable(t, cat)
	cache := maintain.NewManifestCache(1 << 20)
	check := func(step string) {
		t.Helper()
		tbl := loadTable(t, cat, ident)
		fs, err := tbl.FS(ctx)
		if err != nil {
			t.Fatal(err)
		}
		mans, err := cache.Manifests(fs, *tbl.CurrentSnapshot())
		if err != nil {
			t.Fatal(err)
		}
		data, deletes, ok := maintain.LiveFileCounts(mans)
		if !ok {
			t.Fatalf("%s: a v2 manifest list without file counts", step)
		}
		tasks, err := tbl.Scan(table.WithSnapshotID(tbl.CurrentSnapshot().SnapshotID)).PlanFiles(ctx)
		if err != nil {
			t.Fatal(err)
		}
		pData, pDeletes := maintain.PlannedFileCounts(tasks)
		if data != pData || deletes < pDeletes {
			t.Fatalf("%s: manifest list counts %d data and %d delete files, the planner %d and %d", step, data, deletes, pData, pDeletes)
		}
	}
	appendIDs(t, cat, ident, 1, 2, 3)
	check("first append")
	appendIDs(t, cat, ident, 4, 5)
	appendIDs(t, cat, ident, 6)
	check("three appends")
	deleteID(t, cat, ident, 2)
	deleteID(t, cat, ident, 5)
	check("two deletes")
	deleteID(t, cat, ident, 6) // the whole file
	check("a whole file deleted")
	appendIDs(t, cat, ident, 7, 8)
	check("an append after deletes")
}
