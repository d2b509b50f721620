package fetch

import "sync/atomic"

// readerStats counts the reader's work since it started.
type readerStats struct {
	encoded      atomic.Int64
	encodedAhead atomic.Int64
}

// Stats is a snapshot of a reader's counters.
type Stats struct {
	// BatchesEncoded is every batch encoded, by fetches and read-ahead.
	BatchesEncoded int64
	// BatchesEncodedAhead is the part of BatchesEncoded the read-ahead
	// encoded before a consumer asked for it.
	BatchesEncodedAhead int64
	// DiskRangesHeld is how many disk cache ranges responses not yet
	// written (or released) refer to.
	DiskRangesHeld int64
}

// Stats returns the reader's counters.
func (r *Reader) Stats() Stats {
	st := Stats{BatchesEncoded: r.stats.encoded.Load(), BatchesEncodedAhead: r.stats.encodedAhead.Load()}
	if r.cache.disk != nil {
		st.DiskRangesHeld = r.cache.disk.held.Load()
	}
	return st
}
