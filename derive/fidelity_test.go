package derive

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/lakegw/lakegw/changelog"
	"github.com/lakegw/lakegw/lake"
)

// fixturesRoot finds shared/fixtures/iceberg: beside the repository (as CI
// lays it out), else where the workplace keeps it. CI must have it.
func fixturesRoot(t *testing.T) string {
	t.Helper()
	for _, dir := range []string{"../../shared/fixtures/iceberg", "/work/shared/fixtures/iceberg"} {
		if st, err := os.Stat(dir); err == nil && st.IsDir() {
			return dir
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("shared/fixtures/iceberg not found beside the repository")
	}
	t.Skip("shared/fixtures/iceberg not found")
	return ""
}

// fixture is a table of shared/fixtures/iceberg opened in place, read-only,
// with its recorded location mapped to the fixture folder.
type fixture struct {
	name     string
	dir      string // relative to fixturesRoot
	original string // location prefix recorded in the table's metadata
	// counts, when set, are the exact events (by op) of the snapshot with
	// that sequence number.
	counts map[int64]map[changelog.Op]int
	// damaged names the missing file the derivation of some snapshots
	// must report.
	damaged string
}

var fixtures = []fixture{
	{
		name: "duckdb_spec2_mor", dir: "duckdb_spec2_mor/pyspark_iceberg_table",
		original: "data/iceberg/generated_spec2_0_001/pyspark_iceberg_table",
		// From the README: the UPDATEs write as many position deletes as
		// new rows; seq 5 removes a 7690-row file and rewrites 6592; seq 6
		// changes nothing. No identifier fields: updates are delete+insert.
		// (Seq 4 flips a boolean that is null in many rows: only the rows
		// that really change are events, checked by the replay.)
		counts: map[int64]map[changelog.Op]int{
			1: {changelog.OpInsert: 6005},
			2: {changelog.OpInsert: 3077, changelog.OpDelete: 3077},
			3: {changelog.OpInsert: 1685},
			5: {changelog.OpDelete: 7690 - 6592},
			6: {},
			7: {changelog.OpInsert: 685, changelog.OpDelete: 685},
		},
	},
	{
		name: "duckdb_spec1_cow", dir: "duckdb_spec1_cow/pyspark_iceberg_table",
		original: "data/iceberg/generated_spec1_0_001/pyspark_iceberg_table",
		// Format 1 has no sequence numbers: the keys are history
		// positions. The whole-file rewrite of seq 2 (6005 rows out, 6005
		// in) is the same UPDATE as seq 2 of the merge-on-read table: only
		// its 3077 changed rows may appear, never the carry-over.
		counts: map[int64]map[changelog.Op]int{
			1: {changelog.OpInsert: 6005},
			2: {changelog.OpInsert: 3077, changelog.OpDelete: 3077},
			3: {changelog.OpInsert: 1685},
			4: {changelog.OpInsert: 4613, changelog.OpDelete: 4613},
			5: {},
		},
	},
	{
		name: "duckdb_equality_deletes_partitioned", dir: "duckdb_equality_deletes/warehouse/mydb/mytable_partitioned",
		original: "data/persistent/equality_deletes/warehouse/mydb/mytable_partitioned",
	},
	{
		name: "duckdb_equality_deletes_damaged", dir: "duckdb_equality_deletes/warehouse/mydb/mytable",
		original: "data/persistent/equality_deletes/warehouse/mydb/mytable",
		damaged:  "snap-7342794868382145167-1-34f7dec7-90c5-4cd5-b158-5782b73fc010.avro",
	},
	{
		name: "dremio_multi_rowgroup_pos_deletes", dir: "dremio_multi_rowgroup_pos_deletes",
		original: "/tmp/iceberg-test-tables/v2/multi_rowgroup_orders_with_deletes",
		counts: map[int64]map[changelog.Op]int{
			1: {changelog.OpInsert: 9000},
			2: {changelog.OpDelete: 900},
			3: {changelog.OpDelete: 30},
			// 1000 position delete records, of which 155 name positions
			// deleted at seq 2 (counted from the delete files): those
			// yield no second delete.
			4: {changelog.OpDelete: 845},
		},
	},
}

func openFixture(t *testing.T, f fixture) *table.Table {
	t.Helper()
	dir := filepath.Join(fixturesRoot(t), f.dir)
	hint, err := os.ReadFile(filepath.Join(dir, "metadata", "version-hint.text"))
	if err != nil {
		t.Fatalf("fixture %s: %v", f.name, err)
	}
	meta := filepath.Join(dir, "metadata", "v"+strings.TrimSpace(string(hint))+".metadata.json")
	tbl, err := lake.OpenTableAt(context.Background(), table.Identifier{"fixtures", f.name}, meta, nil,
		[]lake.Remap{{From: f.original, To: dir}})
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// TestFidelityFixtures replays the derived events of every snapshot of every
// fixture table and compares the replayed rows with an independent
// iceberg-go scan of each snapshot.
func TestFidelityFixtures(t *testing.T) {
	for _, f := range fixtures {
		t.Run(f.name, func(t *testing.T) {
			tbl := openFixture(t, f)
			hist, err := changelog.MainHistory(tbl.Metadata())
			if err != nil {
				t.Fatal(err)
			}
			state := rowMultiset{}
			var schema *iceberg.Schema
			broken := false
			for _, snap := range hist {
				c, err := Derive(context.Background(), tbl, snap, Options{})
				if f.damaged != "" && err != nil {
					if !strings.Contains(err.Error(), f.damaged) {
						t.Errorf("snapshot %d: error does not name the missing file %s: %v", snap.SnapshotID, f.damaged, err)
					}
					t.Logf("snapshot %d: %v", snap.SnapshotID, err)
					broken = true
					continue
				}
				if err != nil {
					t.Fatalf("snapshot %d (seq %d, %s): %v", snap.SnapshotID, snap.SequenceNumber, snap.Operation, err)
				}
				if broken {
					// Replay cannot continue past a snapshot whose events
					// are unknown; later snapshots must still derive or
					// fail clearly.
					c.Release()
					continue
				}
				state = rekeyByID(t, state, schema, c.Schema)
				schema = c.Schema
				applyChanges(t, state, c)
				ops := countOps(c)
				t.Logf("snapshot %d seq %d %s: %v (%d batches)", snap.SnapshotID, snap.SequenceNumber, snap.Operation, ops, len(c.Batches))
				if want, ok := f.counts[snap.SequenceNumber]; ok && !equalCounts(want, ops) {
					t.Errorf("snapshot seq %d: events %v, want %v", snap.SequenceNumber, ops, want)
				}
				c.Release()
				compareMultisets(t, fmt.Sprintf("snapshot %d (seq %d, %s)", snap.SnapshotID, snap.SequenceNumber, snap.Operation),
					scanRows(t, tbl, snap.SnapshotID), state)
			}
			if f.damaged != "" && !broken {
				t.Errorf("damaged table derived without an error")
			}
		})
	}
}

func equalCounts(want, got map[changelog.Op]int) bool {
	for op, n := range want {
		if got[op] != n {
			return false
		}
	}
	for op, n := range got {
		if want[op] != n {
			return false
		}
	}
	return true
}
