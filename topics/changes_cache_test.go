package topics

import (
	"testing"

	"github.com/lakegw/lakegw/changelog"
)

func changesOf(n int) *changelog.Changes {
	return &changelog.Changes{Records: make([]changelog.Record, n)}
}

func TestChangesCacheIsBoundedByBytes(t *testing.T) {
	c := newChangesCache(100)
	a, b, big := changesKey{"t", 1, 0}, changesKey{"t", 2, 0}, changesKey{"t", 3, 0}
	c.add(a, changesOf(3)) // 60 bytes
	c.add(b, changesOf(3))
	if _, ok := c.get(a); ok {
		t.Fatal("the oldest entry must go once the budget is exceeded")
	}
	if _, ok := c.get(b); !ok {
		t.Fatal("the newest entry must stay")
	}
	// A snapshot larger than the whole budget stays while it is the
	// newest: its batches are read one by one.
	c.add(big, changesOf(10))
	if _, ok := c.get(big); !ok || c.lru.Len() != 1 || c.bytes != changesOf(10).SizeBytes() {
		t.Fatalf("big entry: len %d bytes %d", c.lru.Len(), c.bytes)
	}
	c.add(a, changesOf(1))
	if _, ok := c.get(big); ok || c.bytes != changesOf(1).SizeBytes() {
		t.Fatalf("the big entry must go when a newer one comes: bytes %d", c.bytes)
	}
	// A snapshot whose batches are all encoded is dropped at once, and
	// its bytes with it.
	c.remove(a)
	if _, ok := c.get(a); ok || c.bytes != 0 {
		t.Fatalf("removed entry: found %v, bytes %d", ok, c.bytes)
	}
}
