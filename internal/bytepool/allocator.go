package bytepool

// Allocator is an Apache Arrow memory allocator (it has the methods of
// arrow's memory.Allocator) over the pool. Memory it hands out is zeroed, as
// arrow's Go allocator's is. Its users must Free a buffer only once nothing
// refers to it: changelog/ gives it to Parquet page readers, whose buffers
// never leave the reader.
type Allocator struct{}

// Allocate returns size zeroed bytes.
func (Allocator) Allocate(size int) []byte {
	b := Get(size)[:size]
	clear(b)
	return b
}

// Reallocate resizes b to size, keeping its contents; new bytes are zero.
func (a Allocator) Reallocate(size int, b []byte) []byte {
	if size <= cap(b) {
		old := len(b)
		b = b[:size]
		if size > old {
			clear(b[old:])
		}
		return b
	}
	nb := a.Allocate(size)
	copy(nb, b)
	a.Free(b)
	return nb
}

// Free gives b back to the pool.
func (Allocator) Free(b []byte) { Put(b) }
