package bytepool

import (
	"math/bits"
	"sync"
	"unsafe"
)

const (
	minClass = 12 // 4 KiB: smaller buffers are cheap to allocate
	maxClass = 26 // 64 MiB: above the largest Fetch answer (55 MiB)
)

// pools[c] holds arrays of exactly 1<<c bytes, as unsafe.Pointer so that
// Put does not allocate a slice header on the heap.
var pools [maxClass + 1]sync.Pool

// Get returns an empty slice with capacity at least n.
func Get(n int) []byte {
	if n <= 1<<minClass {
		n = 1 << minClass
	}
	c := bits.Len(uint(n - 1))
	if c > maxClass {
		return make([]byte, 0, n)
	}
	if p, ok := pools[c].Get().(unsafe.Pointer); ok {
		return unsafe.Slice((*byte)(p), 1<<c)[:0]
	}
	return make([]byte, 0, 1<<c)
}

// Put makes b's array available to Get. The caller must not use b, or any
// slice of its array, afterwards.
func Put(b []byte) {
	c := bits.Len(uint(cap(b))) - 1 // largest class b's array can serve
	if c < minClass || c > maxClass {
		return
	}
	pools[c].Put(unsafe.Pointer(unsafe.SliceData(b[:cap(b)])))
}
