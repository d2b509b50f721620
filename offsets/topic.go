package offsets

import (
	"context"
	"fmt"
	"sync"
)

// Snapshot is an indexed snapshot with its record count per partition.
type Snapshot struct {
	// Kind is KindCompactedPrefix for the snapshot whose live rows stand in
	// for the expired history before it.
	Kind           SegmentKind
	SnapshotID     int64
	SequenceNumber int64
	TimestampMs    int64
	// Counts has one entry per partition.
	Counts []int64
}

// Index is the offset index of one topic. Every snapshot of the table gets a
// segment in every partition (possibly empty), so all partitions index the
// same snapshots in the same order. Safe for concurrent use.
type Index struct {
	store Store
	// name and partitions never change after Open; kept outside st, which
	// mutators replace under mu, so that reading them takes no lock.
	name       string
	partitions int32

	mu    sync.RWMutex
	st    TopicState
	parts [][]Segment
	// leaderEpoch is the newest epoch of the topic, of its segments or
	// its epoch list (epochs.go); fenceEpoch the newest of its epoch list,
	// the last rewrite: a client whose current epoch is older may hold a
	// position whose records changed, and is fenced so that it validates.
	leaderEpoch int32
	fenceEpoch  int32
	// steadyEpochs keeps new snapshots under the leader epoch (a raw
	// topic's index, OpenGrowing) instead of one per sequence number.
	steadyEpochs bool
}

// setState replaces the persisted state, with mu held for writing and
// parts already in place.
func (t *Index) setState(st TopicState) {
	t.st = st
	t.fenceEpoch = maxEpoch(st.Epochs)
	t.leaderEpoch = topEpoch(st, t.parts)
}

// Open loads the index of a topic, creating an empty one when it has never
// been indexed. When the table behind the topic was replaced (another table
// UUID) or its partition count changed, the old offsets no longer mean
// anything: the index restarts empty under a higher leader epoch so clients
// see a truncation rather than silently different records.
func Open(ctx context.Context, store Store, topic, tableUUID string, partitions int32) (*Index, error) {
	if partitions < 1 {
		return nil, fmt.Errorf("topic %s: partitions must be >= 1, got %d", topic, partitions)
	}
	st, segs, found, err := store.LoadTopic(ctx, topic)
	if err != nil {
		return nil, err
	}
	t := &Index{store: store, name: topic, partitions: partitions}
	if found && st.TableUUID == tableUUID && st.Partitions == partitions && len(st.Epochs) == int(partitions) {
		t.parts = make([][]Segment, partitions)
		for _, g := range segs {
			if g.Partition < 0 || g.Partition >= partitions {
				return nil, fmt.Errorf("topic %s: stored segment for partition %d of %d", topic, g.Partition, partitions)
			}
			if g.Epoch < 0 {
				// Stored before segments recorded their epoch: it is at
				// most the current one. Taking the current one makes a
				// consumer of an older epoch reread a compacted prefix
				// from its start rather than continue in offsets that
				// may have changed meaning.
				g.Epoch = maxEpoch(st.Epochs)
			}
			t.parts[g.Partition] = append(t.parts[g.Partition], g)
		}
		for _, segs := range t.parts {
			raiseToMonotonic(segs)
		}
		t.setState(st)
		return t, t.checkConsistent()
	}
	epoch := int32(0)
	if found {
		top := maxEpoch(st.Epochs)
		for _, g := range segs {
			top = max(top, g.Epoch)
		}
		var err error
		if epoch, err = nextEpoch(topic, top); err != nil {
			return nil, err
		}
	}
	st = TopicState{Topic: topic, TableUUID: tableUUID, Partitions: partitions, Epochs: make([][]EpochStart, partitions)}
	t.parts = make([][]Segment, partitions)
	for p := range st.Epochs {
		st.Epochs[p] = []EpochStart{{Epoch: epoch, StartOffset: 0}}
	}
	if err := store.ReplaceTopic(ctx, st, nil); err != nil {
		return nil, err
	}
	t.setState(st)
	return t, nil
}

func maxEpoch(epochs [][]EpochStart) int32 {
	m := int32(0)
	for _, es := range epochs {
		for _, e := range es {
			m = max(m, e.Epoch)
		}
	}
	return m
}

// checkConsistent verifies that every partition indexes the same snapshots
// and that offsets are dense: a damaged state store must not serve offsets
// that point at the wrong records.
func (t *Index) checkConsistent() error {
	for p, segs := range t.parts {
		if len(t.st.Epochs[p]) == 0 {
			return fmt.Errorf("topic %s partition %d: no leader epoch stored", t.st.Topic, p)
		}
		next := int64(0)
		if len(segs) > 0 {
			next = segs[0].BaseOffset
		}
		for i, g := range segs {
			if g.BaseOffset != next || g.Count < 0 {
				return fmt.Errorf("topic %s partition %d: offset index is not dense at segment %d (base %d, want %d)", t.st.Topic, p, i, g.BaseOffset, next)
			}
			next += g.Count
			if len(t.parts[0]) <= i || t.parts[0][i].SnapshotID != g.SnapshotID {
				return fmt.Errorf("topic %s: partitions 0 and %d index different snapshots", t.st.Topic, p)
			}
		}
		if len(segs) != len(t.parts[0]) {
			return fmt.Errorf("topic %s: partitions 0 and %d index %d and %d snapshots", t.st.Topic, p, len(t.parts[0]), len(segs))
		}
	}
	return nil
}

// Name is the topic name.
func (t *Index) Name() string { return t.name }

// Partitions is the number of partitions.
func (t *Index) Partitions() int32 { return t.partitions }

// Snapshots returns the indexed snapshots, in offset order.
func (t *Index) Snapshots() []Snapshot {
	t.mu.RLock()
	defer t.mu.RUnlock()
	out := make([]Snapshot, len(t.parts[0]))
	for i := range out {
		out[i], _ = t.snapshotAtLocked(i)
	}
	return out
}

// Append adds snapshots at the end of the index, persisting them before they
// become visible to readers.
func (t *Index) Append(ctx context.Context, snaps []Snapshot) error {
	if len(snaps) == 0 {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	n := t.st.Partitions
	epoch := t.leaderEpoch
	ends := make([]int64, n)
	for p := range ends {
		ends[p] = t.endLocked(int32(p))
	}
	var add []Segment
	newParts := make([][]Segment, n)
	for _, s := range snaps {
		if int32(len(s.Counts)) != n {
			return fmt.Errorf("topic %s: snapshot %d has counts for %d partitions, want %d", t.st.Topic, s.SnapshotID, len(s.Counts), n)
		}
		if !t.steadyEpochs || s.Kind == KindCompactedPrefix {
			epoch = segmentEpoch(s.Kind, s.SequenceNumber, epoch)
		}
		for p := int32(0); p < n; p++ {
			g := Segment{Kind: s.Kind, Partition: p, SnapshotID: s.SnapshotID, SequenceNumber: s.SequenceNumber,
				TimestampMs: s.TimestampMs, BaseOffset: ends[p], Count: s.Counts[p], Epoch: epoch}
			ends[p] += s.Counts[p]
			add = append(add, g)
			newParts[p] = append(newParts[p], g)
		}
	}
	if err := t.store.AppendSegments(ctx, t.st, add); err != nil {
		return err
	}
	for p := range t.parts {
		t.parts[p] = append(t.parts[p], newParts[p]...)
	}
	t.leaderEpoch = epoch
	return nil
}

// Truncate keeps the first keep snapshots and drops the rest, under a new
// leader epoch: the history after them was rewritten (rollback), and the
// offsets past the kept ones will now name other records.
func (t *Index) Truncate(ctx context.Context, keep int) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if keep >= len(t.parts[0]) {
		return nil
	}
	st := t.st
	st.Epochs = make([][]EpochStart, len(t.st.Epochs))
	epoch, err := nextEpoch(t.name, t.leaderEpoch)
	if err != nil {
		return err
	}
	parts := make([][]Segment, len(t.parts))
	var all []Segment
	for p := range t.parts {
		parts[p] = append([]Segment(nil), t.parts[p][:keep]...)
		all = append(all, parts[p]...)
		end := int64(0)
		if keep > 0 {
			last := parts[p][keep-1]
			end = last.BaseOffset + last.Count
		}
		st.Epochs[p] = truncateEpochs(t.st.Epochs[p], epoch, end)
	}
	if err := t.store.ReplaceTopic(ctx, st, all); err != nil {
		return err
	}
	t.parts = parts
	t.setState(st)
	return nil
}

// truncateEpochs drops the epochs that start at or after end (their
// records are gone) and starts epoch there, as Kafka's leader epoch cache
// does on truncation: otherwise an older epoch would seem to end past the
// point where its records stopped being served.
func truncateEpochs(es []EpochStart, epoch int32, end int64) []EpochStart {
	k := len(es)
	for k > 1 && es[k-1].StartOffset >= end {
		k--
	}
	if k == 1 && es[0].StartOffset >= end {
		k = 0
	}
	return append(append([]EpochStart(nil), es[:k]...), EpochStart{Epoch: epoch, StartOffset: end})
}

// ResetToPrefix replaces the whole index by one compacted-prefix segment
// per partition, starting at the current end under a new leader epoch: the
// table's history moved past every indexed snapshot (all of them expired
// while the gateway was away), so only the live rows of s can stand in for
// it. Offsets are never reused: the log start moves up to the old end.
func (t *Index) ResetToPrefix(ctx context.Context, s Snapshot) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if int32(len(s.Counts)) != t.st.Partitions {
		return fmt.Errorf("topic %s: snapshot %d has counts for %d partitions, want %d", t.st.Topic, s.SnapshotID, len(s.Counts), t.st.Partitions)
	}
	st := t.st
	st.Epochs = make([][]EpochStart, len(t.parts))
	epoch, err := nextEpoch(t.name, t.leaderEpoch)
	if err != nil {
		return err
	}
	parts := make([][]Segment, len(t.parts))
	var all []Segment
	for p := range t.parts {
		end := t.endLocked(int32(p))
		g := Segment{Kind: KindCompactedPrefix, Partition: int32(p), SnapshotID: s.SnapshotID,
			SequenceNumber: s.SequenceNumber, TimestampMs: s.TimestampMs, BaseOffset: end, Count: s.Counts[p], Epoch: epoch}
		parts[p] = []Segment{g}
		all = append(all, g)
		st.Epochs[p] = truncateEpochs(t.st.Epochs[p], epoch, end)
	}
	if err := t.store.ReplaceTopic(ctx, st, all); err != nil {
		return err
	}
	t.parts = parts
	t.setState(st)
	return nil
}

// CompactPrefix replaces the segments of the first through+1 snapshots by
// one compacted-prefix segment per partition holding live[p] records: the
// live rows of snapshot through, which stand in for the history before it
// once older snapshots are expired. Offsets after that snapshot keep their
// meaning; the prefix ends where the snapshot's segment ended, so the log
// start moves forward (Kafka log compaction: the prefix never holds more
// records than the history it replaces).
//
// The prefix's offsets change meaning, so it is written under an epoch of
// its own, above those of the snapshots it replaces and below the first
// one kept (epochs.go), and a new leader epoch fences every client so that
// it validates its position. Clients send no LastFetchedEpoch in practice:
// OffsetForLeaderEpoch with the epoch of their last record is how they
// learn of it. One whose last record was replaced is told its epoch ended
// at the prefix's base and reads the prefix from its start (inside the
// prefix it would otherwise read on from the middle of other records and
// silently miss rows); one whose last record is still served reads on.
// Where the epochs leave no room between the last replaced snapshot and
// the first kept one (an index written before epochs were per snapshot),
// the prefix and every segment after it take a new epoch, and every
// consumer past the prefix's base reads it again.
func (t *Index) CompactPrefix(ctx context.Context, through int, live []int64) error {
	return t.CompactPrefixUnder(ctx, through, live, 0)
}

// CompactPrefixUnder is CompactPrefix with the prefix's epoch at least
// minEpoch: a table that determines its offsets (a lakegw LSM table) also
// determines the epoch of each prefix (PrefixEpoch), so every gateway,
// with or without its state store, serves a prefix under the same epoch.
func (t *Index) CompactPrefixUnder(ctx context.Context, through int, live []int64, minEpoch int32) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if through < 0 || through >= len(t.parts[0]) {
		return fmt.Errorf("topic %s: compact through snapshot %d of %d", t.st.Topic, through, len(t.parts[0]))
	}
	if int32(len(live)) != t.st.Partitions {
		return fmt.Errorf("topic %s: live counts for %d partitions, want %d", t.st.Topic, len(live), t.st.Partitions)
	}
	prefixEpoch, relabel, err := t.prefixEpochLocked(through, minEpoch)
	if err != nil {
		return err
	}
	// A new leader epoch fences clients that fetched metadata before the
	// rewrite, unless the prefix's own epoch is already the newest. A
	// table that determines its epochs (minEpoch > 0: a lakegw LSM table)
	// gets no fence: when a gateway sees the prefix, before or after more
	// snapshots, is timing, and a gateway that rebuilt the index from the
	// table (state store lost, another instance) must report the same
	// leader epoch. Its clients validate at the next snapshot, whose epoch
	// is new: one that read into the replaced range meanwhile is then
	// truncated to the prefix's base and reads it whole again.
	fence := int32(0)
	if prefixEpoch <= t.leaderEpoch && minEpoch == 0 {
		if fence, err = nextEpoch(t.name, t.leaderEpoch); err != nil {
			return err
		}
	}
	st := t.st
	st.Epochs = make([][]EpochStart, len(t.st.Epochs))
	parts := make([][]Segment, len(t.parts))
	var all, replacedSegs, prefixes []Segment
	for p := range t.parts {
		segs := t.parts[p]
		last := segs[through]
		end := last.BaseOffset + last.Count
		replaced := end - segs[0].BaseOffset
		if live[p] > replaced {
			return fmt.Errorf("topic %s partition %d: %d live rows at snapshot %d exceed the %d records of the history they replace",
				t.st.Topic, p, live[p], last.SnapshotID, replaced)
		}
		prefix := Segment{Kind: KindCompactedPrefix, Partition: int32(p), SnapshotID: last.SnapshotID,
			SequenceNumber: last.SequenceNumber, TimestampMs: last.TimestampMs, BaseOffset: end - live[p], Count: live[p], Epoch: prefixEpoch}
		parts[p] = append([]Segment{prefix}, segs[through+1:]...)
		if relabel {
			for i := 1; i < len(parts[p]); i++ {
				parts[p][i].Epoch = prefixEpoch
			}
			all = append(all, parts[p]...)
		}
		replacedSegs = append(replacedSegs, segs[:through+1]...)
		prefixes = append(prefixes, prefix)
		// Epochs before the prefix are gone with their records: a client
		// asking for one is told it ended at the prefix's base.
		st.Epochs[p] = []EpochStart{{Epoch: prefixEpoch, StartOffset: prefix.BaseOffset}}
		if fence > 0 {
			hw := t.endLocked(int32(p))
			st.Epochs[p] = append(st.Epochs[p], EpochStart{Epoch: fence, StartOffset: hw})
		}
	}
	// Only a relabel changes the kept segments; otherwise the store drops
	// what the prefix replaces and keeps the rest as it is.
	if relabel {
		err = t.store.ReplaceTopic(ctx, st, all)
	} else {
		err = t.store.ReplacePrefix(ctx, st, replacedSegs, prefixes)
	}
	if err != nil {
		return err
	}
	t.parts = parts
	t.setState(st)
	return nil
}

// prefixEpochLocked picks the epoch of a prefix replacing the first
// through+1 snapshots: above every epoch of what it replaces and at least
// minEpoch; relabel is true when that leaves no room below the first kept
// snapshot's epoch, and the kept segments must take the prefix's epoch.
func (t *Index) prefixEpochLocked(through int, minEpoch int32) (epoch int32, relabel bool, err error) {
	segs := t.parts[0]
	replaced := segs[through].Epoch // segment epochs rise with the offset
	for p, es := range t.st.Epochs {
		last := t.parts[p][through]
		for _, e := range es {
			// An epoch starting where the snapshot ends is of what is kept.
			if e.StartOffset < last.BaseOffset+last.Count {
				replaced = max(replaced, e.Epoch)
			}
		}
	}
	if epoch, err = nextEpoch(t.name, replaced); err != nil {
		return 0, false, err
	}
	epoch = max(epoch, minEpoch)
	if through+1 < len(segs) && epoch >= segs[through+1].Epoch {
		epoch, err = nextEpoch(t.name, max(t.leaderEpoch, minEpoch-1))
		return epoch, true, err
	}
	return epoch, false, nil
}

func (t *Index) endLocked(p int32) int64 {
	return View{segs: t.parts[p], epochs: t.st.Epochs[p]}.HighWatermark()
}

// HighWatermark is the offset after the last record of partition p.
func (t *Index) HighWatermark(p int32) int64 { return t.View(p).HighWatermark() }

// LogStart is the first offset of partition p.
func (t *Index) LogStart(p int32) int64 { return t.View(p).LogStart() }

// Locate returns the segment that holds offset in partition p.
func (t *Index) Locate(p int32, offset int64) (Segment, bool) { return t.View(p).Locate(offset) }

// OffsetForTime returns the first offset of the first snapshot committed at or
// after ts in partition p, with that snapshot's commit time. ok is false when
// no snapshot was committed at or after ts.
func (t *Index) OffsetForTime(p int32, ts int64) (offset, snapshotTs int64, ok bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	for _, g := range t.parts[p] {
		if g.TimestampMs >= ts {
			return g.BaseOffset, g.TimestampMs, true
		}
	}
	return 0, 0, false
}

// LeaderEpoch is the current leader epoch of the topic.
func (t *Index) LeaderEpoch() int32 {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.leaderEpoch
}

// FenceEpoch is the epoch of the topic's last rewrite (View.FenceEpoch).
func (t *Index) FenceEpoch() int32 {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.fenceEpoch
}

// EpochEnd answers OffsetForLeaderEpoch for partition p (View.EpochEnd).
func (t *Index) EpochEnd(p int32, requested int32) (epoch int32, endOffset int64, ok bool) {
	return t.View(p).EpochEnd(requested)
}
