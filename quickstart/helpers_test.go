package quickstart

import (
	"context"
	"database/sql"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/rs/zerolog"
	_ "modernc.org/sqlite"
)

// openTestCatalog opens an iceberg-go SQL catalog on a fresh SQLite file and
// warehouse in a temporary directory: the same kind of catalog lakegw embeds.
func openTestCatalog(t *testing.T) (catalog.Catalog, string) {
	t.Helper()
	dir := t.TempDir()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "catalog.db")+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatalf("open sqlite: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	warehouse := filepath.Join(dir, "warehouse")
	cat, err := sqlcat.NewCatalog("lakegw", db, sqlcat.SQLite, iceberg.Properties{"warehouse": "file://" + warehouse})
	if err != nil {
		t.Fatalf("new sql catalog: %v", err)
	}
	if err := cat.CreateSQLTables(context.Background()); err != nil {
		t.Fatalf("create catalog tables: %v", err)
	}
	return cat, warehouse
}

// fakeClock returns a clock that advances one second per call, so runs with
// the same seed write identical rows.
func fakeClock() func() time.Time {
	var mu sync.Mutex
	now := time.Date(2026, 3, 1, 9, 0, 0, 123456789, time.UTC)
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		now = now.Add(time.Second)
		return now
	}
}

func newTestDemo(t *testing.T, cat catalog.Catalog, seed uint64) *Demo {
	t.Helper()
	return NewDemo(cat, zerolog.New(zerolog.NewTestWriter(t)), DemoOptions{Seed: seed, Now: fakeClock()})
}

func steps(t *testing.T, d *Demo, n int) []int64 {
	t.Helper()
	ids := make([]int64, 0, n)
	for i := range n {
		id, err := d.Step(context.Background())
		if err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		ids = append(ids, id)
	}
	return ids
}

// requireSameOrders fails unless got and want hold the same orders, every
// column equal.
func requireSameOrders(t *testing.T, got, want map[int64]Order) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("got %d live orders, want %d", len(got), len(want))
	}
	for id, w := range want {
		g, ok := got[id]
		switch {
		case !ok:
			t.Errorf("order %d missing", id)
		case !g.Equal(w):
			t.Errorf("order %d:\n got  %+v\n want %+v", id, g, w)
		}
	}
	for id := range got {
		if _, ok := want[id]; !ok {
			t.Errorf("unexpected order %d", id)
		}
	}
}

func requireTableMatchesModel(t *testing.T, d *Demo) {
	t.Helper()
	live, err := d.LiveRows(context.Background())
	if err != nil {
		t.Fatalf("live rows: %v", err)
	}
	requireSameOrders(t, live, d.Expected())
}
