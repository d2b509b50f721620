package offsets

import (
	"sort"

	"github.com/lakegw/lakegw/state"
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
	epochs []state.EpochStart
	// leaderEpoch is the topic's current epoch (the newest of any
	// partition), the one batches are encoded under.
	leaderEpoch int32
}

// View returns partition p's index as it is now.
func (t *Topic) View(p int32) View {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return View{segs: t.parts[p], epochs: t.st.Epochs[p], leaderEpoch: t.leaderEpoch}
}

// LeaderEpoch is the topic's leader epoch when the view was taken.
func (v View) LeaderEpoch() int32 { return v.leaderEpoch }

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
// the offset at which it ended (the high watermark for the current epoch).
// ok is false when requested is newer than any epoch.
func (v View) EpochEnd(requested int32) (epoch int32, endOffset int64, ok bool) {
	es := v.epochs
	if requested > es[len(es)-1].Epoch {
		return 0, 0, false
	}
	if requested < es[0].Epoch {
		// Older than any epoch we know: Kafka answers with the requested
		// epoch ending where the first known one starts.
		return requested, es[0].StartOffset, true
	}
	// An epoch ends where the earliest later epoch starts (lists written
	// before truncateEpochs may hold a later epoch starting earlier).
	end := v.HighWatermark()
	for i := len(es) - 1; i >= 0; i-- {
		if es[i].Epoch <= requested {
			return es[i].Epoch, end, true
		}
		end = min(end, es[i].StartOffset)
	}
	return es[0].Epoch, end, true
}
