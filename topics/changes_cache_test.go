package topics

import (
	"testing"

	"github.com/lakegw/lakegw/changelog"
)

func changesOf(n int) *changelog.Changes {
	return &changelog.Changes{Records: make([]changelog.Record, n)}
}

// The cache is bounded by the memory the derived snapshots hold.
func TestChangesCacheIsBoundedByBytes(t *testing.T) {
	c := newChangesCache(100, 0)
	a, b, big := changesKey{topic: "t", snapshotID: 1}, changesKey{topic: "t", snapshotID: 2}, changesKey{topic: "t", snapshotID: 3}
	c.Add(a, changesOf(3)) // 60 bytes
	c.Add(b, changesOf(3))
	if _, ok := c.Get(a); ok {
		t.Fatal("the oldest entry must go once the budget is exceeded")
	}
	if _, ok := c.Get(b); !ok {
		t.Fatal("the newest entry must stay")
	}
	// A snapshot larger than the whole budget stays while it is the
	// newest: its batches are read one by one.
	c.Add(big, changesOf(10))
	if _, ok := c.Get(big); !ok || c.Len() != 1 || c.Bytes() != changesOf(10).SizeBytes() {
		t.Fatalf("big entry: len %d bytes %d", c.Len(), c.Bytes())
	}
	// A snapshot whose batches are all encoded is dropped at once, and
	// its bytes with it.
	c.Remove(big)
	if _, ok := c.Get(big); ok || c.Bytes() != 0 {
		t.Fatalf("removed entry: found %v, bytes %d", ok, c.Bytes())
	}
}
