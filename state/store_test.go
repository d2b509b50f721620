package state

import (
	"context"
	"path/filepath"
	"testing"
)

// Every connection of the store syncs at each commit (synchronous=FULL):
// an OffsetCommit is acknowledged once SaveOffsets returns, so a
// power loss must not take it back.
func TestStoreSyncsEveryCommit(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t)
	// Hold several connections at once so the pool cannot hand back the
	// same one every time.
	s.db.SetMaxIdleConns(4)
	const fullSync = 2 // PRAGMA synchronous: 0 OFF, 1 NORMAL, 2 FULL, 3 EXTRA
	for i := 0; i < 4; i++ {
		conn, err := s.db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		var mode int
		if err := conn.QueryRowContext(ctx, `PRAGMA synchronous`).Scan(&mode); err != nil {
			t.Fatal(err)
		}
		if mode < fullSync {
			t.Fatalf("connection %d: synchronous=%d, want FULL (%d) or stronger", i, mode, fullSync)
		}
	}
}

// openTestStore opens a store in a fresh directory, closed when the test
// ends.
func openTestStore(tb testing.TB) *Store {
	tb.Helper()
	s, err := Open(context.Background(), filepath.Join(tb.TempDir(), "state.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { s.Close() })
	return s
}
