package lsm

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// Every supported column type round-trips through a sorted run, a
// composite key (string, int) is bucketed, looked up and updated, and the
// memcomparable key encoding orders as the values do.
func TestLsmAllTypesCompositeKey(t *testing.T) {
	ctx := context.Background()
	cat := testCatalog(t, t.TempDir())
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "region", Type: iceberg.PrimitiveTypes.String, Required: true},
		iceberg.NestedField{ID: 2, Name: "n", Type: iceberg.PrimitiveTypes.Int32, Required: true},
		iceberg.NestedField{ID: 3, Name: "ok", Type: iceberg.PrimitiveTypes.Bool},
		iceberg.NestedField{ID: 4, Name: "f", Type: iceberg.PrimitiveTypes.Float32},
		iceberg.NestedField{ID: 5, Name: "b", Type: iceberg.PrimitiveTypes.Binary},
		iceberg.NestedField{ID: 6, Name: "d", Type: iceberg.PrimitiveTypes.Date},
		iceberg.NestedField{ID: 7, Name: "ts", Type: iceberg.PrimitiveTypes.Timestamp},
		iceberg.NestedField{ID: 8, Name: "tstz", Type: iceberg.PrimitiveTypes.TimestampTz},
	)
	ident := table.Identifier{"ns", "types"}
	tb, err := Create(ctx, cat, ident, sc, CreateOptions{PrimaryKey: []string{"region", "n"}, Buckets: 3}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	w, _ := tb.NewWriter(ctx)
	for i := 0; i < 20; i++ {
		row := map[string]any{"region": fmt.Sprint("r", i%3), "n": i, "ok": i%2 == 0, "f": float64(i) / 2,
			"b": []byte{byte(i), 0}, "d": "2024-03-01", "ts": "2024-03-01T10:00:00.5", "tstz": "2024-03-01T10:00:00Z"}
		if err := w.Upsert(row); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if err := w.Upsert(map[string]any{"region": "r1", "n": 4, "ok": true, "f": 9.5}); err != nil {
		t.Fatal(err)
	}
	if err := w.Delete(map[string]any{"region": "r2", "n": 5}); err != nil {
		t.Fatal(err)
	}
	res, err := w.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, n := range res.Counts {
		total += n
	}
	if total != 2 {
		t.Fatalf("counts %v", res.Counts)
	}
	row, ok, err := tb.Get(ctx, map[string]any{"region": "r1", "n": 4})
	if err != nil || !ok {
		t.Fatalf("get: %v %v", ok, err)
	}
	if row["f"] != float32(9.5) || row["ok"] != true || row["b"] != nil || row["d"] != nil {
		t.Fatalf("get r1/4: %v", row)
	}
	row, ok, err = tb.Get(ctx, map[string]any{"region": "r0", "n": 6})
	if err != nil || !ok || row["d"] != int32(19783) || row["ts"] != int64(1709287200500000) || row["tstz"] != int64(1709287200000000) || !slices.Equal(row["b"].([]byte), []byte{6, 0}) {
		t.Fatalf("get r0/6: %v %v %v", row, ok, err)
	}
	if _, ok, _ := tb.Get(ctx, map[string]any{"region": "r2", "n": 5}); ok {
		t.Fatal("deleted key found")
	}
	tbl, _ := cat.LoadTable(ctx, ident)
	if ev := deriveEvents(t, tbl, res.SnapshotID); len(ev) != 2 {
		t.Fatalf("events of the second commit: %q", ev)
	}
	// Key encoding order.
	vals := [][]any{{int64(-5), int64(-1), int64(0), int64(3)}, {int32(-2), int32(0), int32(7)}, {-1.5, math.Copysign(0, -1), 2.25}, {"", "a", "a\x00", "ab", "b"}}
	for _, vs := range vals {
		for i := 1; i < len(vs); i++ {
			a, b := string(appendKeyPart(nil, vs[i-1])), string(appendKeyPart(nil, vs[i]))
			if a >= b {
				t.Errorf("key order: %v !< %v", vs[i-1], vs[i])
			}
		}
	}
}
