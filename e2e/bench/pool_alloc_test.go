package main

import (
	"math/bits"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// poolAllocator is an experiment for the cold path: an arrow allocator that
// recycles released buffers by power-of-two size class instead of leaving
// them to the GC. Arrow expects zeroed memory, so a recycled buffer is
// cleared; the gain, if any, is fewer fresh pages and less GC work.
// changelog/ could hand one to iceberg-go's scans through
// compute.WithAllocator(ctx, ...), the way this benchmark does.
type poolAllocator struct {
	goa   *memory.GoAllocator
	pools [48]sync.Pool
}

func newPoolAllocator() *poolAllocator { return &poolAllocator{goa: memory.NewGoAllocator()} }

const minPooled = 4 << 10

func sizeClass(n int) int { return bits.Len(uint(n - 1)) }

func (a *poolAllocator) Allocate(size int) []byte {
	if size < minPooled {
		return a.goa.Allocate(size)
	}
	c := sizeClass(size)
	if v := a.pools[c].Get(); v != nil {
		b := (*v.(*[]byte))[:size]
		clear(b)
		return b
	}
	return a.goa.Allocate(1 << c)[:size]
}

func (a *poolAllocator) Reallocate(size int, b []byte) []byte {
	if cap(b) >= size {
		return b[:size]
	}
	nb := a.Allocate(size)
	copy(nb, b)
	a.Free(b)
	return nb
}

func (a *poolAllocator) Free(b []byte) {
	c := cap(b)
	if c < minPooled || c&(c-1) != 0 {
		return
	}
	b = b[:c]
	a.pools[sizeClass(c)].Put(&b)
}
