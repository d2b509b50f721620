package lsm

import (
	"container/list"
	"sync"
)

// fileCache keeps decoded files (sorted runs: rows and key index; delete
// files: positions) of hot files, bounded by estimated bytes. Files are
// immutable, so an entry never goes stale; it only stops being used once
// compaction replaces its file, and compaction then drops it (forget): a
// long-lived Table (serve's compactor keeps one per table) would otherwise
// fill its bound with the files of every compaction since it opened. The
// files another process's compaction replaced are dropped when this Table
// next loads the head to compact (retainOnly): serve's compactor of a table
// whose writer compacts too filled its 64 MiB with them over a 20,000-commit
// soak, the largest growing part of the gateway's heap.
type fileCache struct {
	mu    sync.Mutex
	max   int64
	size  int64
	order *list.List // front = most recent
	items map[string]*list.Element
}

type cacheEntry struct {
	key   string
	value any
	size  int64
}

func newFileCache(maxBytes int64) *fileCache {
	return &fileCache{max: maxBytes, order: list.New(), items: map[string]*list.Element{}}
}

func (c *fileCache) get(key string) (any, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[key]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(e)
	return e.Value.(*cacheEntry).value, true
}

func (c *fileCache) add(key string, value any, size int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if size > c.max {
		return
	}
	if e, ok := c.items[key]; ok {
		c.size -= e.Value.(*cacheEntry).size
		c.order.Remove(e)
	}
	c.items[key] = c.order.PushFront(&cacheEntry{key: key, value: value, size: size})
	c.size += size
	for c.size > c.max {
		e := c.order.Back()
		ent := e.Value.(*cacheEntry)
		c.order.Remove(e)
		delete(c.items, ent.key)
		c.size -= ent.size
	}
}

// forget drops the entries of keys, if cached.
func (c *fileCache) forget(keys ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range keys {
		if e, ok := c.items[k]; ok {
			c.size -= e.Value.(*cacheEntry).size
			c.order.Remove(e)
			delete(c.items, k)
		}
	}
}

// retainOnly drops every entry whose key is not in keep.
func (c *fileCache) retainOnly(keep map[string]bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, e := range c.items {
		if !keep[k] {
			c.size -= e.Value.(*cacheEntry).size
			c.order.Remove(e)
			delete(c.items, k)
		}
	}
}

// len is the number of entries.
func (c *fileCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.items)
}
