package fetch

import "github.com/lakegw/lakegw/internal/bytepool"

// Spans holds the record batches one answer reads from its partitions
// (ReadPartition): bytes in a pooled buffer, and ranges of the batch disk
// cache's files, which stay open until Release, so that the connection can
// send them with sendfile.
type Spans struct {
	sink batchSink
	disk *diskCache
}

// NewSpans returns an empty Spans whose buffer starts with room for
// sizeHint bytes; Release gives it back.
func (r *Reader) NewSpans(sizeHint int) *Spans {
	return &Spans{sink: batchSink{arena: bytepool.Get(sizeHint), files: true}, disk: r.cache.disk}
}

// Reset drops every batch read so far, keeping the buffer for the next
// reads: an answer read again (a long poll woken by new data) is dropped
// whole, with the disk cache files it referred to.
func (s *Spans) Reset() {
	releaseSegments(s.sink.segs)
	s.sink = batchSink{arena: s.sink.arena[:0], files: true}
}

// Release gives back the buffer the batches were read into and the disk
// cache files they refer to; none of the batches may be used after it. A
// second Release does nothing (a frame dropped after a panic may be
// released twice).
func (s *Spans) Release() {
	releaseSegments(s.sink.segs)
	s.sink.segs = nil
	if s.sink.arena != nil {
		bytepool.Put(s.sink.arena)
		s.sink.arena = nil
	}
}

// FileFailed reports that a file range of these spans could not be read
// (sendfile or Batches.ReadAll failed on the file's side): the disk cache
// is disabled, as when a read of it fails in the gateway, so that the next
// fetches encode the batches again instead of failing on the same file.
func (s *Spans) FileFailed(err error) {
	if s.disk == nil {
		return
	}
	s.disk.log.Error().Err(err).Msg("batch disk cache file cannot be read; disabling it")
	s.disk.disable()
}

func releaseSegments(segs []*diskSegment) {
	for _, s := range segs {
		s.unref()
	}
}
