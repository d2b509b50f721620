package derive

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/changelog"
)

// TestExpiredHistoryStartsFromReadSnapshot expires old snapshots: the
// oldest retained snapshot cannot be diffed against its missing parent
// (a clear error), but its live rows (ReadSnapshot) followed by the events
// of later snapshots replay to every retained snapshot.
func TestExpiredHistoryStartsFromReadSnapshot(t *testing.T) {
	ctx := context.Background()
	cat := newTestCatalog(t)
	tbl := createTable(t, cat, "expiry", testSchema())
	tbl = appendJSON(t, tbl, jsonRows(0, 10), 0)
	tbl = appendJSON(t, tbl, jsonRows(10, 20), 0)
	tbl = deleteWhere(t, tbl, idIn(1, 12))
	tbl = deleteWhere(t, tbl, idIn(2, 13))
	tbl = appendJSON(t, tbl, jsonRows(20, 25), 0)
	tx := tbl.NewTransaction()
	if err := tx.ExpireSnapshots(table.WithRetainLast(3), table.WithOlderThan(time.Nanosecond)); err != nil {
		t.Fatal(err)
	}
	var err error
	if tbl, err = tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	hist, err := changelog.MainHistory(tbl.Metadata())
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 3 {
		t.Fatalf("%d retained snapshots, want 3", len(hist))
	}
	if _, err := Derive(ctx, tbl, hist[0], Options{}); err == nil || !strings.Contains(err.Error(), "expired") {
		t.Fatalf("deriving a snapshot whose parent expired: %v", err)
	}
	prefix, err := ReadSnapshot(ctx, tbl, hist[0], Options{})
	if err != nil {
		t.Fatal(err)
	}
	state := rowMultiset{}
	applyChanges(t, state, prefix)
	prefix.Release()
	compareMultisets(t, "prefix", scanRows(t, tbl, hist[0].SnapshotID), state)
	for _, snap := range hist[1:] {
		c, err := Derive(ctx, tbl, snap, Options{})
		if err != nil {
			t.Fatal(err)
		}
		applyChanges(t, state, c)
		c.Release()
		compareMultisets(t, snap.Operation, scanRows(t, tbl, snap.SnapshotID), state)
	}
}
