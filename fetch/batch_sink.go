package fetch

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

// take returns the partition's batches and empties the sink for the next
// partition (the arena and the segment references stay).
func (s *batchSink) take() Batches {
	bs := make(Batches, len(s.spans))
	for i, sp := range s.spans {
		if sp.loc.seg != nil {
			bs[i] = FileSpan(sp.loc.seg.f, sp.loc.off, sp.n)
			continue
		}
		bs[i] = BytesSpan(s.arena[sp.at : sp.at+sp.n : sp.at+sp.n])
	}
	s.spans, s.n = nil, 0
	return bs
}
