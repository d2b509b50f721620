package derive

import (
	"context"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"

	"github.com/lakegw/lakegw/changelog"
)

// RowGroupCache keeps recently decoded row groups of data files, whole and
// projected onto a scan's schema, for the before-images of position
// deletes. A merge-on-read table's updates and deletes fall on the same
// recent files snapshot after snapshot (an order is updated soon after it
// is placed), spread over every page of them: without it each snapshot
// decompressed and decoded those files again, a quarter of a cold replay's
// CPU (issue 20). A row group is cached when a read wants many of its rows
// (see denseGroupRows), and a file of one row group when it is read whole
// as a snapshot's new file; a few scattered deletes are still read
// selectively. Bounded in bytes, shared by every topic, safe for
// concurrent use; a nil *RowGroupCache caches nothing.
//
// Eviction is not least-recently-used: a snapshot reads the groups it
// deletes from and then adds its new file, so with the working set at or
// above the size of the cache LRU evicted whichever group the snapshot
// happened to read first, the next snapshot missed it and evicted another,
// and nothing was ever served. Within a table the newest files are the
// ones the next snapshots delete from, so the victim is the group of the
// table's oldest file (lowest data sequence number), and a group older
// than every cached one of its table is not admitted when the cache is
// full: a working set too large for the cache still gets hits on its
// newest part. Groups no derivation used in the last staleDerivations go
// before any of that, least recently used first, so the tables being read
// now share the cache and an idle one's groups leave.
type RowGroupCache struct {
	mu     sync.Mutex
	groups map[rowGroupKey]*cachedGroup
	// decoding holds the groups a derivation is decoding to cache, closed
	// when done: a cold range is derived a few snapshots at once (the
	// read-ahead), and the next snapshot's before-images are in the file
	// the previous one is still reading as inserts. Waiting costs less
	// than decoding the file twice on a machine the cold read keeps busy.
	// Bounded by the decodes running.
	decoding map[rowGroupKey]chan struct{}
	bytes    int64
	maxBytes int64
	gen      uint64
	hits     int64
	misses   int64
}

// rowGroupKey names a row group: data file paths are unique in a lake (a
// rewritten file gets a new name), so a path and a group never change.
type rowGroupKey struct {
	path  string
	group int
}

// cachedGroup is a row group's rows read with a schema; the cache holds
// one reference to batch, released when it is evicted.
type cachedGroup struct {
	schema *iceberg.Schema
	batch  arrow.RecordBatch
	size   int64
	// table is the table's UUID, seq its file's data sequence number,
	// gen the derivation that last used it: the eviction order.
	table string
	seq   int64
	gen   uint64
}

// staleDerivations is how many derivations (of any table) may pass before
// the groups none of them used are evicted first.
const staleDerivations = 16

// maxCachedGroups backstops the byte bound against a flood of tiny groups
// (and bounds the victim search).
const maxCachedGroups = 4096

// NewRowGroupCache returns a cache of at most maxBytes of decoded rows;
// nil when maxBytes is not positive.
func NewRowGroupCache(maxBytes int64) *RowGroupCache {
	if maxBytes <= 0 {
		return nil
	}
	return &RowGroupCache{maxBytes: maxBytes, groups: map[rowGroupKey]*cachedGroup{}, decoding: map[rowGroupKey]chan struct{}{}}
}

// rowGroups is the cache as one derivation of a table uses it.
type rowGroups struct {
	c     *RowGroupCache
	table string
	gen   uint64
}

// derivation returns the view of a new derivation of the table with the
// given UUID: what it uses counts as used after everything used before.
func (c *RowGroupCache) derivation(table string) rowGroups {
	if c == nil {
		return rowGroups{}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	return rowGroups{c: c, table: table, gen: c.gen}
}

// enabled reports whether anything is cached.
func (v rowGroups) enabled() bool { return v.c != nil }

// cacheable reports whether a file is small enough to be read as one batch
// for the cache as a snapshot's new file: its rows decoded could fit
// (Parquet compresses table data well under eight times), and no column of
// one batch comes near the decode cap.
func (v rowGroups) cacheable(f iceberg.DataFile) bool {
	return v.c != nil && f.FileSizeBytes() <= v.c.maxBytes/8 && f.Count() <= maxWholeFileRows
}

// maxWholeFileRows bounds the rows of a file read as one batch for the
// cache (see cacheable).
const maxWholeFileRows = 1 << 20

// get returns the cached rows of a row group read with schema, retained
// for the caller (who releases them).
func (v rowGroups) get(path string, group int, schema *iceberg.Schema) (arrow.RecordBatch, bool) {
	c := v.c
	if c == nil {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	g, ok := c.groups[rowGroupKey{path, group}]
	if !ok || !g.schema.Equals(schema) {
		c.misses++
		return nil, false
	}
	c.hits++
	g.gen = max(g.gen, v.gen)
	// Retained under the lock: an eviction cannot release the batch
	// between the look-up and the caller's reference.
	g.batch.Retain()
	return g.batch, true
}

// getOrWait is get, waiting first for a decode of the group another
// derivation claimed (see claim) to finish.
func (v rowGroups) getOrWait(ctx context.Context, path string, group int, schema *iceberg.Schema) (arrow.RecordBatch, bool) {
	if v.c == nil {
		return nil, false
	}
	v.c.mu.Lock()
	done, ok := v.c.decoding[rowGroupKey{path, group}]
	v.c.mu.Unlock()
	if ok {
		select {
		case <-done:
		case <-ctx.Done():
			return nil, false
		}
	}
	return v.get(path, group, schema)
}

// claim marks a group as being decoded to be cached, until the returned
// function is called (after add, or on failure); nothing happens when
// another decode of it is under way or nothing is cached.
func (v rowGroups) claim(path string, group int) (done func()) {
	c := v.c
	if c == nil {
		return func() {}
	}
	k := rowGroupKey{path, group}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.decoding[k]; ok {
		return func() {}
	}
	ch := make(chan struct{})
	c.decoding[k] = ch
	return func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(c.decoding, k)
		close(ch)
	}
}

// add caches the rows of a row group of a file with data sequence number
// seq, read with schema; the cache takes a reference of its own.
func (v rowGroups) add(path string, group int, seq int64, schema *iceberg.Schema, b arrow.RecordBatch) {
	c := v.c
	if c == nil {
		return
	}
	size := changelog.BatchBytes(b)
	if size > c.maxBytes {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	k := rowGroupKey{path, group}
	if old, ok := c.groups[k]; ok {
		c.drop(k, old)
	}
	g := &cachedGroup{schema: schema, batch: b, size: size, table: v.table, seq: seq, gen: v.gen}
	for c.bytes+size > c.maxBytes || len(c.groups) >= maxCachedGroups {
		vk, victim := c.victim(g)
		if victim == nil {
			return // it would go first: not admitted
		}
		c.drop(vk, victim)
	}
	b.Retain()
	c.groups[k] = g
	c.bytes += size
}

// victim is the group to evict to make room for g, nil when g itself would
// be the one (see RowGroupCache). Called with c.mu held and the cache not
// empty.
func (c *RowGroupCache) victim(g *cachedGroup) (rowGroupKey, *cachedGroup) {
	var (
		staleK, ownK, lruK rowGroupKey
		stale, own, lru    *cachedGroup
	)
	for k, e := range c.groups {
		if e.gen+staleDerivations < g.gen && (stale == nil || e.gen < stale.gen) {
			staleK, stale = k, e
		}
		if e.table == g.table && (own == nil || e.seq < own.seq || e.seq == own.seq && e.gen < own.gen) {
			ownK, own = k, e
		}
		if lru == nil || e.gen < lru.gen || e.gen == lru.gen && e.seq < lru.seq {
			lruK, lru = k, e
		}
	}
	switch {
	case stale != nil:
		return staleK, stale
	case own != nil && own.seq > g.seq:
		return rowGroupKey{}, nil
	case own != nil:
		return ownK, own
	}
	return lruK, lru
}

// drop removes a group and releases the cache's reference. Called with
// c.mu held.
func (c *RowGroupCache) drop(k rowGroupKey, g *cachedGroup) {
	delete(c.groups, k)
	c.bytes -= g.size
	g.batch.Release()
}

// Stats returns the look-ups served from the cache, those that were not,
// and the bytes held.
func (c *RowGroupCache) Stats() (hits, misses, bytes int64) {
	if c == nil {
		return 0, 0, 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits, c.misses, c.bytes
}
