package derive

import (
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"

	"github.com/lakegw/lakegw/internal/bytepool"
)

// pageBuffers is the allocator of the Parquet page readers of the
// selective row reader (readFlatRowsAt). Every column chunk it reads gets
// a page reader whose decompression and page buffers grow to a page's size
// and are released when the chunk is closed; with Go's allocator that was
// about 400 bytes of fresh, zeroed memory per derived record, most of the
// cold path's page faults and a good part of its garbage. These buffers
// never leave the page reader (the rows are copied into Arrow builders
// with their own allocator before the chunk is closed), so they can be
// recycled.
var pageBuffers memory.Allocator = bytepool.Allocator{}

// pageReaderProperties reads column chunks through a small buffer rather
// than reading each chunk whole into a new slice first (the default):
// pages are read straight into the pooled page buffers. Each refill is one
// ranged read: a system call on local files (the only ones lakegw links a
// file system for today), but a request on an object store, where a
// larger buffer would be needed.
func pageReaderProperties() *parquet.ReaderProperties {
	return readerPropertiesWith(pageBuffers)
}

// readerPropertiesWith is pageReaderProperties with another allocator.
func readerPropertiesWith(alloc memory.Allocator) *parquet.ReaderProperties {
	props := parquet.NewReaderProperties(alloc)
	props.BufferedStreamEnabled = true
	props.BufferSize = 64 << 10
	return props
}
