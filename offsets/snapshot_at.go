package offsets

// Len is the number of indexed snapshots.
func (t *Topic) Len() int {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return len(t.parts[0])
}

// First returns the oldest indexed snapshot (the compacted prefix, if any),
// without copying the index; ok is false when nothing is indexed.
func (t *Topic) First() (s Snapshot, ok bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.snapshotAtLocked(0)
}

// Last returns the newest indexed snapshot, without copying the index; ok
// is false when nothing is indexed. The watcher extends the index from it.
func (t *Topic) Last() (s Snapshot, ok bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.snapshotAtLocked(len(t.parts[0]) - 1)
}

// snapshotAtLocked returns the i-th indexed snapshot with its count in
// every partition.
func (t *Topic) snapshotAtLocked(i int) (Snapshot, bool) {
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
