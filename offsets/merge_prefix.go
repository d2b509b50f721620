package offsets

import (
	"context"
	"fmt"
)

// MergePrefix replaces the segments of the first through+1 snapshots by one
// compacted-prefix segment per partition holding exactly the records they
// held (live[p] must be all of them), for a topic whose records keep their
// offsets and content whatever snapshot they belong to (a raw topic, read
// by offset). Unlike CompactPrefix nothing is rewritten, so no consumer
// may be truncated: the prefix keeps the epoch of the oldest segment it
// replaces, the epochs of what it replaces collapse into that one
// (starting at the log start), and OffsetForLeaderEpoch of any of them
// answers the end of the prefix, past every position inside it. No new
// leader epoch fences anyone.
func (t *Index) MergePrefix(ctx context.Context, through int, live []int64) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if through < 0 || through >= len(t.parts[0]) {
		return fmt.Errorf("topic %s: merge through snapshot %d of %d", t.st.Topic, through, len(t.parts[0]))
	}
	if int32(len(live)) != t.st.Partitions {
		return fmt.Errorf("topic %s: counts for %d partitions, want %d", t.st.Topic, len(live), t.st.Partitions)
	}
	st := t.st
	st.Epochs = make([][]EpochStart, len(t.st.Epochs))
	parts := make([][]Segment, len(t.parts))
	var replacedSegs, prefixes []Segment
	for p := range t.parts {
		segs := t.parts[p]
		last := segs[through]
		start, end := segs[0].BaseOffset, last.BaseOffset+last.Count
		if live[p] != end-start {
			return fmt.Errorf("topic %s partition %d: a merged prefix holds the %d records it replaces, not %d", t.st.Topic, p, end-start, live[p])
		}
		epoch := segs[0].Epoch
		prefix := Segment{Kind: KindCompactedPrefix, Partition: int32(p), SnapshotID: last.SnapshotID,
			SequenceNumber: last.SequenceNumber, TimestampMs: last.TimestampMs, BaseOffset: start, Count: live[p], Epoch: epoch}
		parts[p] = append([]Segment{prefix}, segs[through+1:]...)
		replacedSegs = append(replacedSegs, segs[:through+1]...)
		prefixes = append(prefixes, prefix)
		es := []EpochStart{{Epoch: epoch, StartOffset: start}}
		for _, e := range t.st.Epochs[p] {
			if e.StartOffset >= end && e.Epoch > epoch {
				es = append(es, e)
			}
		}
		st.Epochs[p] = es
	}
	if err := t.store.ReplacePrefix(ctx, st, replacedSegs, prefixes); err != nil {
		return err
	}
	t.parts = parts
	t.setState(st)
	return nil
}
