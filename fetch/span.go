package fetch

import (
	"fmt"
	"os"
)

// Span is a run of record batch bytes of a read: in memory, or a range of
// a file of the batch disk cache. A connection sends a file range with
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

// Batches are the record batches of one partition, in order.
type Batches []Span

// Len is the batches' size in bytes.
func (bs Batches) Len() int {
	n := 0
	for _, s := range bs {
		n += s.n
	}
	return n
}

// ReadAll returns the batches' bytes in one slice, reading file ranges
// into memory, for a writer that needs the bytes themselves. Batches of
// one span of memory are returned as they are, without a copy. An error
// is a file range that cannot be read (see Spans.FileFailed).
func (bs Batches) ReadAll() ([]byte, error) {
	if len(bs) == 1 && bs[0].f == nil {
		return bs[0].b, nil
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
			return nil, fmt.Errorf("read record batches from %s: %w", s.f.Name(), err)
		}
	}
	return buf, nil
}
