package fetch

import (
	"fmt"
	"os"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lakegw/lakegw/internal/bytepool"
)

// Span is a run of record batch bytes of a response: in memory, or a range
// of a file of the batch disk cache. A connection sends a file range with
// sendfile, from the page cache to the socket, rather than copying it into
// the process and out again, as a Kafka broker serves its log.
type Span struct {
	b   []byte
	f   *os.File
	off int64
	n   int
}

// BytesSpan is a span of b.
func BytesSpan(b []byte) Span { return Span{b: b, n: len(b)} }

// FileSpan is a span of n bytes of f from off; f must stay open until the
// span is written.
func FileSpan(f *os.File, off int64, n int) Span { return Span{f: f, off: off, n: n} }

// Len is the span's size in bytes.
func (s Span) Len() int { return s.n }

// Bytes returns the span's bytes, or nil for a file range.
func (s Span) Bytes() []byte { return s.b }

// File returns the file range of the span, or a nil file for bytes.
func (s Span) File() (f *os.File, off int64, n int) { return s.f, s.off, s.n }

// Batches are the record batches of one partition of a response, in order.
type Batches []Span

// Len is the batches' size in bytes.
func (bs Batches) Len() int {
	n := 0
	for _, s := range bs {
		n += s.n
	}
	return n
}

// Response is a Fetch response with its record batches. Batches[i][j] are
// those of Topics[i].Partitions[j]. A partition whose batches are all in
// memory also has them in RecordBatches; one with file ranges has an empty
// RecordBatches until Materialize.
type Response struct {
	*kmsg.FetchResponse
	Batches [][]Batches

	arena []byte
	segs  []*diskSegment
	disk  *diskCache
}

// FileFailed reports that a file range of the response could not be read
// (sendfile or Materialize failed on the file's side): the disk cache is
// disabled, as when a read of it fails in the gateway, so that the next
// fetches encode the batches again instead of failing on the same file.
func (r *Response) FileFailed(err error) {
	if r.disk == nil {
		return
	}
	r.disk.log.Error().Err(err).Msg("batch disk cache file cannot be read; disabling it")
	r.disk.disable()
}

// Release gives back the buffer the batches were read into and the disk
// cache files they refer to; nothing of the response may be used after it.
func (r *Response) Release() {
	releaseSegments(r.segs)
	r.segs = nil
	if r.arena != nil {
		bytepool.Put(r.arena)
		r.arena = nil
	}
}

func releaseSegments(segs []*diskSegment) {
	for _, s := range segs {
		s.unref()
	}
}

// Materialize reads the file ranges into memory, so that every partition's
// RecordBatches holds its batches (for an encoder that needs the bytes).
func (r *Response) Materialize() error {
	for i := range r.Batches {
		for j, bs := range r.Batches[i] {
			if !bs.inFiles() {
				continue
			}
			buf := make([]byte, 0, bs.Len())
			for _, s := range bs {
				if s.f == nil {
					buf = append(buf, s.b...)
					continue
				}
				at := len(buf)
				buf = buf[:at+s.n]
				if _, err := s.f.ReadAt(buf[at:], s.off); err != nil {
					err = fmt.Errorf("read record batches from %s: %w", s.f.Name(), err)
					r.FileFailed(err)
					return err
				}
			}
			r.Topics[i].Partitions[j].RecordBatches = buf
		}
	}
	return nil
}

func (bs Batches) inFiles() bool {
	for _, s := range bs {
		if s.f != nil {
			return true
		}
	}
	return false
}

// batchSink collects the batches of one partition as a read finds them:
// bytes are appended to arena; disk cache hits, when files is set, stay in
// their files (with a reference on their segment).
type batchSink struct {
	arena []byte
	files bool
	spans []sinkSpan
	n     int
	segs  []*diskSegment
}

// sinkSpan is bytes of the arena from at (arena offsets stay valid as it
// grows; slices would not) or a file range.
type sinkSpan struct {
	at  int
	loc diskLoc
	n   int
}

func (s *batchSink) appendBytes(v []byte) {
	at := len(s.arena)
	s.arena = append(s.arena, v...)
	s.addArena(at, len(v))
}

// addArena records n bytes appended to the arena at at.
func (s *batchSink) addArena(at, n int) {
	s.n += n
	if k := len(s.spans); k > 0 && s.spans[k-1].loc.seg == nil && s.spans[k-1].at+s.spans[k-1].n == at {
		s.spans[k-1].n += n
		return
	}
	s.spans = append(s.spans, sinkSpan{at: at, n: n})
}

// addFile records a disk cache range whose segment the caller referenced.
func (s *batchSink) addFile(loc diskLoc) {
	s.n += loc.n
	s.segs = append(s.segs, loc.seg)
	s.spans = append(s.spans, sinkSpan{loc: loc, n: loc.n})
}

// take returns the partition's batches and, when they are all in memory,
// their bytes, and empties the sink for the next partition (the arena and
// the segment references stay).
func (s *batchSink) take() (Batches, []byte) {
	bs := make(Batches, len(s.spans))
	inMemory := true
	for i, sp := range s.spans {
		if sp.loc.seg != nil {
			bs[i] = FileSpan(sp.loc.seg.f, sp.loc.off, sp.n)
			inMemory = false
			continue
		}
		bs[i] = BytesSpan(s.arena[sp.at : sp.at+sp.n : sp.at+sp.n])
	}
	var flat []byte
	if inMemory {
		flat = []byte{} // never null (size -1): librdkafka rejects it as a parse failure
		if len(s.spans) > 0 {
			// One partition's arena bytes are contiguous.
			first, last := s.spans[0], s.spans[len(s.spans)-1]
			flat = s.arena[first.at : last.at+last.n : last.at+last.n]
		}
	}
	s.spans, s.n = nil, 0
	return bs, flat
}
