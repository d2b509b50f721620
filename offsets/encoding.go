package offsets

import (
	"context"
)

// Encoding returns the encoding of the topic's records the index was
// last told of (SetEncoding); empty when never told.
func (t *Index) Encoding() string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.st.Encoding
}

// SetEncoding records how the topic's records are encoded (an opaque name
// of everything that shapes them: format, key columns, schema...). When
// it differs from the one the index last served under, the records read
// differently, and a new leader epoch tells consumers so:
//
//   - relaid (another format, key or table): the records at every offset
//     changed. The new epoch starts at the log start of every partition,
//     so a consumer that read them under the old encoding sees a
//     truncation (OffsetForLeaderEpoch, or a diverging epoch in Fetch) and
//     reads them again, as after a Kafka unclean leader election.
//   - not relaid (the schema records are written in changed): every
//     offset holds the same event, written anew. The new epoch starts at
//     the log end: consumers are fenced once, validate their position and
//     read on from it, nothing delivered twice; batches below it keep
//     their epochs, and their records are served in the new encoding.
//
// raised says whether it started an epoch.
//
// An index that never recorded an encoding (new, or written by a lakegw
// that did not record it) takes this one without a new epoch: what it
// was served under is not known, and every consumer of an upgraded
// gateway would otherwise read its topics again.
func (t *Index) SetEncoding(ctx context.Context, encoding string, relaid bool) (raised bool, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.st.Encoding == encoding {
		return false, nil
	}
	st := t.st
	st.Encoding = encoding
	parts := t.parts
	switch {
	case t.st.Encoding == "":
		// The segments are unchanged: only the topic state is written.
		if err := t.store.AppendSegments(ctx, st, nil); err != nil {
			return false, err
		}
	case relaid:
		raised = true
		epoch, err := nextEpoch(t.name, t.leaderEpoch)
		if err != nil {
			return false, err
		}
		// Every record is served anew under one epoch: a consumer that
		// read any of them under an older one reads them again.
		st.Epochs = make([][]EpochStart, len(t.st.Epochs))
		parts = make([][]Segment, len(t.parts))
		for p := range t.parts {
			start := View{segs: t.parts[p], epochs: t.st.Epochs[p]}.LogStart()
			st.Epochs[p] = truncateEpochs(t.st.Epochs[p], epoch, start)
			parts[p] = append([]Segment(nil), t.parts[p]...)
			for i := range parts[p] {
				parts[p][i].Epoch = epoch
			}
		}
		if err := t.store.ReplaceTopic(ctx, st, flatten(parts)); err != nil {
			return false, err
		}
	default:
		raised = true
		epoch, err := nextEpoch(t.name, t.leaderEpoch)
		if err != nil {
			return false, err
		}
		st.Epochs = make([][]EpochStart, len(t.st.Epochs))
		for p := range t.st.Epochs {
			st.Epochs[p] = truncateEpochs(t.st.Epochs[p], epoch, t.endLocked(int32(p)))
		}
		if err := t.store.AppendSegments(ctx, st, nil); err != nil {
			return false, err
		}
	}
	t.parts = parts
	t.setState(st)
	return raised, nil
}

// flatten lists the segments of every partition.
func flatten(parts [][]Segment) []Segment {
	var all []Segment
	for _, segs := range parts {
		all = append(all, segs...)
	}
	return all
}
