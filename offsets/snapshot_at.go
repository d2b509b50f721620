package offsets

import (
	"context"
	"fmt"
)

// Len is the number of indexed snapshots.
func (t *Index) Len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.parts[0])
}

// First returns the oldest indexed snapshot (the compacted prefix, if any),
// without copying the index; ok is false when nothing is indexed.
func (t *Index) First() (s Snapshot, ok bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.snapshotAtLocked(0)
}

// Last returns the newest indexed snapshot, without copying the index; ok
// is false when nothing is indexed. The watcher extends the index from it.
func (t *Index) Last() (s Snapshot, ok bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.snapshotAtLocked(len(t.parts[0]) - 1)
}

// snapshotAtLocked returns the i-th indexed snapshot with its count in
// every partition.
func (t *Index) snapshotAtLocked(i int) (Snapshot, bool) {
	if i < 0 || i >= len(t.parts[0]) {
		return Snapshot{}, false
	}
	g := t.parts[0][i]
	s := Snapshot{Kind: g.Kind, SnapshotID: g.SnapshotID, SequenceNumber: g.SequenceNumber, TimestampMs: g.TimestampMs, Counts: make([]int64, len(t.parts))}
	for p := range t.parts {
		s.Counts[p] = t.parts[p][i].Count
	}
	return s, true
}

// RaiseEpoch starts the log of an empty index under epoch, when that is
// higher than its current one: an index rebuilt from nothing for a table
// whose early history is gone cannot reproduce the offsets it had, so it
// must not reuse an epoch under which they were served.
func (t *Index) RaiseEpoch(ctx context.Context, epoch int32) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.parts[0]) > 0 {
		return fmt.Errorf("topic %s: raise the epoch of an index holding %d snapshots", t.st.Topic, len(t.parts[0]))
	}
	if epoch <= maxEpoch(t.st.Epochs) {
		return nil
	}
	st := t.st
	st.Epochs = make([][]EpochStart, len(t.st.Epochs))
	for p := range st.Epochs {
		st.Epochs[p] = truncateEpochs(t.st.Epochs[p], epoch, t.endLocked(int32(p)))
	}
	if err := t.store.ReplaceTopic(ctx, st, nil); err != nil {
		return err
	}
	t.setState(st)
	return nil
}
