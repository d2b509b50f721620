package offsets

import (
	"sort"
)

// View is one partition's index as it stood at one moment: its segments,
// its leader epochs, its high watermark and log start. A Fetch answers a
// partition from one View, so that a concurrent truncation or compaction
// cannot mix two states of the index in one answer (a high watermark of
// one, batches located in the other, cached under the epoch of either).
//
// A View shares memory with the index without a lock: the index never
// writes a segment or epoch list a View can see (Append only writes past
// the end of the slices, every rewrite builds new ones).
type View struct {
	segs   []Segment
	epochs []EpochStart
	// leaderEpoch is the topic's newest epoch, fenceEpoch its last
	// rewrite's (Index.leaderEpoch, Index.fenceEpoch).
	leaderEpoch int32
	fenceEpoch  int32
}

// View returns partition p's index as it is now.
func (t *Index) View(p int32) View {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return View{segs: t.parts[p], epochs: t.st.Epochs[p], leaderEpoch: t.leaderEpoch, fenceEpoch: t.fenceEpoch}
}

// LeaderEpoch is the topic's leader epoch when the view was taken: the
// newest epoch of any batch it serves, or of a rewrite.
func (v View) LeaderEpoch() int32 { return v.leaderEpoch }

// FenceEpoch is the epoch of the topic's last rewrite (a prefix, a
// rollback, a new encoding) when the view was taken. A client whose
// current leader epoch is older may hold a position whose records changed:
// it is fenced, and validates its position with OffsetForLeaderEpoch. A
// newer snapshot alone changes no record, and fences no one.
func (v View) FenceEpoch() int32 { return v.fenceEpoch }

// HighWatermark is the offset after the partition's last record.
func (v View) HighWatermark() int64 {
	if len(v.segs) == 0 {
		// An empty index starts where its newest epoch does.
		return v.epochs[len(v.epochs)-1].StartOffset
	}
	last := v.segs[len(v.segs)-1]
	return last.BaseOffset + last.Count
}

// LogStart is the partition's first offset.
func (v View) LogStart() int64 {
	if len(v.segs) > 0 {
		return v.segs[0].BaseOffset
	}
	return v.HighWatermark()
}

// Locate returns the segment that holds offset.
func (v View) Locate(offset int64) (Segment, bool) {
	segs := v.segs
	// Ends are non-decreasing; the first segment ending after offset holds
	// it, and cannot be empty if it starts at or before offset.
	i := sort.Search(len(segs), func(i int) bool { return segs[i].BaseOffset+segs[i].Count > offset })
	if i == len(segs) || segs[i].BaseOffset > offset {
		return Segment{}, false
	}
	return segs[i], true
}

// EpochEnd answers OffsetForLeaderEpoch: the largest epoch <= requested and
// the offset at which it ended (the high watermark for the newest). The
// partition's epochs are its segments' (one per snapshot) and its epoch
// list's (rewrites); both rise with the offset. ok is false when requested
// is newer than any epoch. A requested epoch older than every one known
// (its records were compacted away) ends where the partition now starts,
// as Kafka answers.
func (v View) EpochEnd(requested int32) (epoch int32, endOffset int64, ok bool) {
	if requested > v.leaderEpoch {
		return 0, 0, false
	}
	segs, es := v.segs, v.epochs
	found := false
	for _, e := range es {
		if e.Epoch <= requested && (!found || e.Epoch > epoch) {
			epoch, found = e.Epoch, true
		}
	}
	// The first segment of a newer epoch than requested.
	i := sort.Search(len(segs), func(i int) bool { return segs[i].Epoch > requested })
	if i > 0 && (!found || segs[i-1].Epoch > epoch) {
		epoch, found = segs[i-1].Epoch, true
	}
	if !found {
		start := es[0].StartOffset
		if len(segs) > 0 {
			start = min(start, segs[0].BaseOffset)
		}
		return requested, start, true
	}
	// The epoch ends where the first newer one starts (lists written
	// before truncateEpochs may hold a later epoch starting earlier).
	end := v.HighWatermark()
	for _, e := range es {
		if e.Epoch > epoch {
			end = min(end, e.StartOffset)
		}
	}
	if j := sort.Search(len(segs), func(i int) bool { return segs[i].Epoch > epoch }); j < len(segs) {
		end = min(end, segs[j].BaseOffset)
	}
	return epoch, end, true
}
