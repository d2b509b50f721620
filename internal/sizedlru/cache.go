package sizedlru

import (
	"sync"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
)

// maxEntries backstops the byte bound, which is the real one: a flood of
// tiny values must not grow the list without end either.
const maxEntries = 1 << 20

// Cache maps keys to values, evicting the least recently used ones while
// their sizes add up to more than the bound. The bound gives way for one
// entry only: a value larger than the whole budget stays while it is the
// most recent, since whoever added it is about to read it. With an idle
// bound (ExpireIdle), entries not used for that long go too. Safe for
// concurrent use.
type Cache[K comparable, V any] struct {
	mu       sync.Mutex
	lru      *simplelru.LRU[K, entry[V]]
	size     func(V) int64
	bytes    int64
	maxBytes int64
	// idle is how long an entry may go unused (0: for ever); now is the
	// clock it is measured with.
	idle time.Duration
	now  func() time.Time
}

// entry is a value and when it was last added or read (unix nanoseconds).
type entry[V any] struct {
	v  V
	at int64
}

// New returns a cache holding values whose sizes, as given by size, add up
// to at most maxBytes. size must return the same for a value every time.
func New[K comparable, V any](maxBytes int64, size func(V) int64) *Cache[K, V] {
	c := &Cache[K, V]{size: size, maxBytes: maxBytes, now: time.Now}
	// The callback runs under c.mu: every call into the list does.
	c.lru, _ = simplelru.NewLRU[K, entry[V]](maxEntries, func(_ K, e entry[V]) { c.bytes -= c.size(e.v) })
	return c
}

// ExpireIdle makes entries go once unused for d (d <= 0: never), so that
// the cache holds what its readers use now rather than filling up to its
// bound and staying full. The entries that have been idle longest are the
// least recently used ones, so each Add and Get drops them from the tail
// of the list: nothing runs in the background. It returns c.
func (c *Cache[K, V]) ExpireIdle(d time.Duration) *Cache[K, V] {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.idle = max(d, 0)
	return c
}

// Get returns the value of k and marks it as recently used.
func (c *Cache[K, V]) Get(k K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.lru.Get(k)
	if !ok {
		var zero V
		return zero, false
	}
	if c.idle > 0 {
		now := c.now().UnixNano()
		// Refreshing an entry in place allocates nothing: the list
		// element is reused.
		e.at = now
		c.lru.Add(k, e)
		c.dropIdle(now)
	}
	return e.v, true
}

// Add sets the value of k, evicting the least recently used entries the
// bound no longer has room for.
func (c *Cache[K, V]) Add(k K, v V) {
	c.mu.Lock()
	defer c.mu.Unlock()
	// Replacing a value goes through the eviction callback, which takes
	// the old value's size off.
	c.lru.Remove(k)
	now := int64(0)
	if c.idle > 0 {
		now = c.now().UnixNano()
	}
	c.lru.Add(k, entry[V]{v: v, at: now})
	c.bytes += c.size(v)
	for c.bytes > c.maxBytes && c.lru.Len() > 1 {
		c.lru.RemoveOldest()
	}
	if c.idle > 0 {
		c.dropIdle(now)
	}
}

// dropIdle removes the entries unused since before now less the idle
// bound, oldest first. Called with c.mu held.
func (c *Cache[K, V]) dropIdle(now int64) {
	for {
		_, e, ok := c.lru.GetOldest()
		if !ok || now-e.at <= int64(c.idle) {
			return
		}
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
