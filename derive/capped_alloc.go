package derive

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/memory"
)

// cappedAllocator refuses, by panicking (recovered by the file check),
// any one allocation above max bytes. A damaged length in a file (a page
// header's uncompressed size, the message length of an embedded Arrow
// schema) makes arrow-go allocate that much at once, and running out of
// memory is fatal in Go, not a panic anyone can recover: the check
// decodes under this cap, so a file that would make the scanner allocate
// without bound is refused before the scanner sees it.
type cappedAllocator struct {
	inner memory.Allocator
	max   int
}

func (a cappedAllocator) Allocate(size int) []byte {
	a.refuse(size)
	return a.inner.Allocate(size)
}

func (a cappedAllocator) Reallocate(size int, b []byte) []byte {
	a.refuse(size)
	return a.inner.Reallocate(size, b)
}

func (a cappedAllocator) Free(b []byte) { a.inner.Free(b) }

func (a cappedAllocator) refuse(size int) {
	if size > a.max {
		panic(fmt.Sprintf("allocation of %d bytes asked for, more than %d for this file", size, a.max))
	}
}

// decodeCap is the largest single allocation decoding a file of size
// bytes may make: a page, a column chunk of one batch or a dictionary
// can legitimately be larger than the file (compression), but not by
// orders of magnitude beyond minDecodeCap.
func decodeCap(size int64) int {
	const minDecodeCap = 256 << 20
	return int(max(minDecodeCap, 8*size))
}
