package offsetstest

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/lakegw/lakegw/offsets"
	"github.com/lakegw/lakegw/state"
)

// Open opens the empty index of topic, with its partitions, on a fresh
// state store in a temporary directory, closed when the test ends.
func Open(tb testing.TB, topic string, partitions int32) *offsets.Index {
	tb.Helper()
	store, err := state.Open(context.Background(), filepath.Join(tb.TempDir(), "state.db"))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { store.Close() })
	idx, err := offsets.Open(context.Background(), store, topic, "u", partitions)
	if err != nil {
		tb.Fatal(err)
	}
	return idx
}
