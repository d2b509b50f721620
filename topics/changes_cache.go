package topics

import (
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/lakegw/lakegw/changelog"
	"github.com/lakegw/lakegw/state"
)

// changesKey names the records of a segment of a topic: a snapshot's
// changes, or its live rows when it is a compacted prefix.
type changesKey struct {
	topic      string
	snapshotID int64
	kind       state.SegmentKind
}

// changesCache keeps derived snapshots for the fetches that read them batch
// by batch, bounded by their memory across all topics. The bound gives way
// for one entry only: a snapshot larger than the whole budget stays while it
// is the most recent, since every batch of it would otherwise derive it
// again.
type changesCache struct {
	mu       sync.Mutex
	lru      *lru.Cache[changesKey, *changelog.Changes]
	bytes    int64
	maxBytes int64
}

func newChangesCache(maxBytes int64) *changesCache {
	c := &changesCache{maxBytes: maxBytes}
	// The entry count is only a backstop; bytes are the real bound.
	c.lru, _ = lru.NewWithEvict[changesKey, *changelog.Changes](1<<16, func(_ changesKey, v *changelog.Changes) {
		c.bytes -= v.SizeBytes()
	})
	return c
}

func (c *changesCache) get(k changesKey) (*changelog.Changes, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Get(k)
}

func (c *changesCache) add(k changesKey, v *changelog.Changes) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.lru.Peek(k); ok {
		c.bytes -= old.SizeBytes()
	}
	c.lru.Add(k, v)
	c.bytes += v.SizeBytes()
	for c.bytes > c.maxBytes && c.lru.Len() > 1 {
		c.lru.RemoveOldest()
	}
}

// remove drops k, if cached.
func (c *changesCache) remove(k changesKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Remove(k)
}
