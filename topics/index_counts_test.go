package topics

import (
	"context"
	"testing"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/offsets"
)

// An append of more records than IndexDeriveMaxRecords is indexed from its
// manifests: nothing of it is derived or held until a fetch asks, and what
// the fetch derives is what the index counted. A smaller one is derived
// and cached for the consumers at the tail.
func TestLargeAppendIsIndexedFromItsManifests(t *testing.T) {
	f := startRegistrySetUp(t, t.TempDir(), func(c catalog.Catalog) catalog.Catalog { return c },
		func(r *Registry, _ catalog.Catalog) { r.cfg.IndexDeriveMaxRecords = 2 })
	ident := table.Identifier{"ns", "big"}
	createTable(t, f, ident)
	appendIDs(t, f.cat, ident, 1, 2)
	appendIDs(t, f.cat, ident, 3, 4, 5)
	waitFor(t, "5 records", func() bool { tp, ok := f.reg.Topic("ns.big"); return ok && tp.Index.HighWatermark(0) == 5 })
	tp, _ := f.reg.Topic("ns.big")
	small, ok1 := tp.Index.Locate(0, 0)
	large, ok2 := tp.Index.Locate(0, 2)
	if !ok1 || !ok2 || small.Count != 2 || large.Count != 3 || small.SnapshotID == large.SnapshotID {
		t.Fatalf("segments %+v %+v, want the two appends of 2 and 3 records", small, large)
	}
	cached := func(s offsets.Segment) bool {
		_, ok := tp.changes.Get(tp.changesKey(s.SnapshotID, offsets.KindChanges, tp.Encoding()))
		return ok
	}
	if !cached(small) {
		t.Error("the small append was not derived and cached when indexed")
	}
	if cached(large) {
		t.Error("the large append was derived to be indexed")
	}
	c, err := tp.Changes(context.Background(), large, tp.Encoding())
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Records) != 3 {
		t.Fatalf("the fetch derived %d records, the index counted 3", len(c.Records))
	}
}
