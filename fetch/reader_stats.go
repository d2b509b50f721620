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
}

// Stats returns the reader's counters.
func (r *Reader) Stats() Stats {
	return Stats{BatchesEncoded: r.stats.encoded.Load(), BatchesEncodedAhead: r.stats.encodedAhead.Load()}
}
