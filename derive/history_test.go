package derive

import (
	"context"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"

	"github.com/lakegw/lakegw/changelog"
)

// changelog.MainHistorySince, on real tables (the tables of derive/'s
// tests): it returns what MainHistory holds after a given snapshot,
// and declines (ok false) when that snapshot is not an ancestor of the main
// head any more: after a rollback, the caller must align the whole history.
func TestMainHistorySince(t *testing.T) {
	for _, version := range []string{"1", "2"} {
		t.Run("v"+version, func(t *testing.T) {
			cat := newTestCatalog(t)
			tbl := createTable(t, cat, "h", testSchema(), catalog.WithProperties(iceberg.Properties{"format-version": version}))
			for i := range 5 {
				tbl = appendJSON(t, tbl, jsonRows(i, i+1), 0)
			}
			full, err := changelog.MainHistory(tbl.Metadata())
			if err != nil {
				t.Fatal(err)
			}
			got, ok, err := changelog.MainHistorySince(tbl.Metadata(), full[2])
			if err != nil || !ok || len(got) != 2 {
				t.Fatalf("since the third snapshot: %v %v %v, want the last two", got, ok, err)
			}
			for i, r := range got {
				if r != full[3+i] {
					t.Errorf("snapshot %d: %+v, MainHistory says %+v", 3+i, r, full[3+i])
				}
			}
			if got, ok, err := changelog.MainHistorySince(tbl.Metadata(), full[4]); err != nil || !ok || len(got) != 0 {
				t.Fatalf("since the head: %v %v %v, want nothing new", got, ok, err)
			}

			// Roll back to the second snapshot and commit another: the
			// fourth is no longer an ancestor of the head.
			tx := tbl.NewTransaction()
			if err := tx.RollbackToSnapshot(full[1].SnapshotID); err != nil {
				t.Fatal(err)
			}
			if tbl, err = tx.Commit(context.Background()); err != nil {
				t.Fatal(err)
			}
			tbl = appendJSON(t, tbl, jsonRows(9, 10), 0)
			if got, ok, err := changelog.MainHistorySince(tbl.Metadata(), full[3]); err != nil || ok {
				t.Fatalf("since a rolled-back snapshot: %v %v %v, want not found", got, ok, err)
			}
			got, ok, err = changelog.MainHistorySince(tbl.Metadata(), full[1])
			if err != nil || !ok || len(got) != 1 {
				t.Fatalf("since the rollback target: %v %v %v, want the new snapshot", got, ok, err)
			}
			if want := full[1].SequenceNumber + 1; version == "1" && got[0].SequenceNumber != want {
				t.Errorf("v1 sequence number %d, want %d (position in the main history)", got[0].SequenceNumber, want)
			}
		})
	}
}
