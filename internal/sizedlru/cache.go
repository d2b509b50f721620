package sizedlru

import (
	"sync"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// maxEntries backstops the byte bound, which is the real one: a flood of
// tiny values must not grow the list without end either.
const maxEntries = 1 << 20

// Cache maps keys to values, evicting the least recently used ones while
// their sizes add up to more than the bound. The bound gives way for one
// entry only: a value larger than the whole budget stays while it is the
// most recent, since whoever added it is about to read it. Safe for
// concurrent use.
type Cache[K comparable, V any] struct {
	mu       sync.Mutex
	lru      *simplelru.LRU[K, V]
	size     func(V) int64
	bytes    int64
	maxBytes int64
}

// New returns a cache holding values whose sizes, as given by size, add up
// to at most maxBytes. size must return the same for a value every time.
func New[K comparable, V any](maxBytes int64, size func(V) int64) *Cache[K, V] {
	c := &Cache[K, V]{size: size, maxBytes: maxBytes}
	// The callback runs under c.mu: every call into the list does.
	c.lru, _ = simplelru.NewLRU[K, V](maxEntries, func(_ K, v V) { c.bytes -= c.size(v) })
	return c
}

// Get returns the value of k and marks it as recently used.
func (c *Cache[K, V]) Get(k K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Get(k)
}

// Add sets the value of k, evicting the least recently used entries the
// bound no longer has room for.
func (c *Cache[K, V]) Add(k K, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	// Replacing a value goes through the eviction callback, which takes
	// the old value's size off.
	c.lru.Remove(k)
	c.lru.Add(k, v)
	c.bytes += c.size(v)
	for c.bytes > c.maxBytes && c.lru.Len() > 1 {
		c.lru.RemoveOldest()
	}
}

// Remove drops k, if cached.
func (c *Cache[K, V]) Remove(k K) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.lru.Remove(k)
}

// Len is the number of entries.
func (c *Cache[K, V]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Len()
}

// Bytes is the total size of the entries.
func (c *Cache[K, V]) Bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytes
}
