package derive

import (
	"context"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/lakegw/lakegw/changelog"
)

// AppendCount answers only where the manifests alone decide the records,
// and then says exactly how many Derive gives: every snapshot of every
// fixture (Spark, DuckDB and Dremio tables: appends, copy-on-write and
// merge-on-read updates, equality deletes, a rewrite) and a multi-file
// append.
func TestAppendCountAgreesWithDerive(t *testing.T) {
	check := func(t *testing.T, name, damaged string, hist []changelog.SnapshotRef, derive func(changelog.SnapshotRef) (*changelog.Changes, error),
		count func(changelog.SnapshotRef) (int64, bool, error)) (appends, others int) {
		for _, snap := range hist {
			n, ok, err := count(snap)
			c, derr := derive(snap)
			if derr != nil {
				// The damaged fixture misses a manifest list: a
				// snapshot Derive cannot read is never counted (the
				// count fails, or leaves it to Derive, which fails).
				if damaged == "" || !strings.Contains(derr.Error(), damaged) {
					t.Fatalf("%s snapshot %d: %v", name, snap.SnapshotID, derr)
				}
				if err == nil && ok {
					t.Errorf("%s snapshot %d: counted %d records, Derive fails: %v", name, snap.SnapshotID, n, derr)
				}
				continue
			}
			ops := countOps(c)
			pure := len(ops) == 0 || (len(ops) == 1 && ops[changelog.OpInsert] > 0)
			switch {
			case err != nil:
				t.Errorf("%s snapshot %d: %v", name, snap.SnapshotID, err)
			case ok && int64(len(c.Records)) != n:
				t.Errorf("%s snapshot %d (%s): counted %d records, Derive gives %d", name, snap.SnapshotID, snap.Operation, n, len(c.Records))
			case ok && !pure:
				t.Errorf("%s snapshot %d (%s): counted from manifests, but Derive gives %v", name, snap.SnapshotID, snap.Operation, ops)
			case ok:
				appends++
			default:
				others++
			}
			c.Release()
		}
		return appends, others
	}
	var appends, others int
	for _, f := range fixtures {
		tbl := openFixture(t, f)
		hist, err := changelog.MainHistory(tbl.Metadata())
		if err != nil {
			t.Fatal(err)
		}
		a, o := check(t, f.name, f.damaged, hist,
			func(s changelog.SnapshotRef) (*changelog.Changes, error) {
				return Derive(context.Background(), tbl, s, Options{})
			},
			func(s changelog.SnapshotRef) (int64, bool, error) {
				return AppendCount(context.Background(), tbl, s, Options{})
			})
		appends, others = appends+a, others+o
	}

	// Many files in one append; then the same table spread over two
	// partitions, where a record's partition depends on its key.
	cat := newTestCatalog(t)
	sc := iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "v", Type: iceberg.PrimitiveTypes.String})
	tbl := createTable(t, cat, "many", sc)
	tbl = appendJSON(t, tbl, `[{"id":1,"v":"a"},{"id":2,"v":"b"},{"id":3,"v":"c"},{"id":4,"v":"d"},{"id":5,"v":"e"}]`, 2)
	hist, err := changelog.MainHistory(tbl.Metadata())
	if err != nil {
		t.Fatal(err)
	}
	a, o := check(t, "many", "", hist,
		func(s changelog.SnapshotRef) (*changelog.Changes, error) {
			return Derive(context.Background(), tbl, s, Options{})
		},
		func(s changelog.SnapshotRef) (int64, bool, error) {
			return AppendCount(context.Background(), tbl, s, Options{})
		})
	if a != 1 || o != 0 {
		t.Errorf("a five-row append of three files: %d counted, %d not", a, o)
	}
	appends, others = appends+a, others+o
	if _, ok, err := AppendCount(context.Background(), tbl, hist[0], Options{Partitions: 2}); err != nil || ok {
		t.Errorf("two partitions: counted (%v, %v); a record's partition is its key's", ok, err)
	}
	if appends == 0 || others == 0 {
		t.Fatalf("the fixtures gave %d counted appends and %d other snapshots: the test needs both", appends, others)
	}
	t.Logf("%d appends counted from manifests, %d other snapshots left to Derive", appends, others)
}
