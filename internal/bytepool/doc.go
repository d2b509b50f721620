// Package bytepool recycles large byte buffers by power-of-two capacity.
//
// A Fetch answer is megabytes that live for one request: allocating them
// fresh each time costs page faults on never-touched memory and garbage
// collections, which profiles of the warm read path showed as most of its
// CPU. fetch/ reads record batches into these buffers and protocol/ frames
// responses in them; derive/ gives them to its Parquet page readers as
// their allocator. Each gives a buffer back only once nothing refers to it.
//
// It imports nothing of lakegw's.
package bytepool
