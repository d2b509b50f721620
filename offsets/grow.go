package offsets

import (
	"context"
	"fmt"
)

// OpenGrowing is Open for a topic whose partitions may only be added to
// (a raw topic: a record stays in the partition it was produced to, so
// CreatePartitions moves none). When the stored index has fewer partitions
// than asked, it keeps every offset and epoch of the existing ones and
// adds the new ones empty, with a segment of no records for each snapshot
// already indexed (every partition has one segment per snapshot) under
// that segment's epoch: no consumer of an existing partition is truncated.
// Any other mismatch starts afresh as Open does.
//
// Its snapshots keep the leader epoch rather than take one per sequence
// number (see epochStride): a raw topic never rewrites the start of its
// log (every produced record stays at its offset), so per-snapshot epochs
// served nothing there, and at the 20 commits a second of a busy producer
// they reached the largest epoch in about ten months, after which the next
// rewrite failed with "leader epochs exhausted".
func OpenGrowing(ctx context.Context, store Store, topic, tableUUID string, partitions int32) (*Index, error) {
	t, err := openGrowing(ctx, store, topic, tableUUID, partitions)
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	t.steadyEpochs = true
	t.mu.Unlock()
	return t, nil
}

func openGrowing(ctx context.Context, store Store, topic, tableUUID string, partitions int32) (*Index, error) {
	st, _, found, err := store.LoadTopic(ctx, topic)
	if err != nil {
		return nil, err
	}
	if !found || st.TableUUID != tableUUID || st.Partitions >= partitions || st.Partitions < 1 || len(st.Epochs) != int(st.Partitions) {
		return Open(ctx, store, topic, tableUUID, partitions)
	}
	old, err := Open(ctx, store, topic, tableUUID, st.Partitions)
	if err != nil {
		return nil, err
	}
	old.mu.Lock()
	defer old.mu.Unlock()
	grown := old.st
	grown.Partitions = partitions
	grown.Epochs = append([][]EpochStart(nil), old.st.Epochs...)
	parts := append([][]Segment(nil), old.parts...)
	first := old.parts[0]
	for p := st.Partitions; p < partitions; p++ {
		epoch := old.st.Epochs[0][0].Epoch
		if len(first) > 0 {
			epoch = first[0].Epoch
		}
		grown.Epochs = append(grown.Epochs, []EpochStart{{Epoch: epoch, StartOffset: 0}})
		var ps []Segment
		for _, g := range first {
			g.Partition, g.BaseOffset, g.Count = p, 0, 0
			ps = append(ps, g)
		}
		parts = append(parts, ps)
	}
	if err := store.ReplaceTopic(ctx, grown, flatten(parts)); err != nil {
		return nil, fmt.Errorf("topic %s: grow to %d partitions: %w", topic, partitions, err)
	}
	t := &Index{store: store, name: topic, partitions: partitions, parts: parts}
	t.setState(grown)
	return t, t.checkConsistent()
}
