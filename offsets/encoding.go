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
// it differs from the one the index last served under, the records at
// every existing offset now read differently: the offsets keep their
// snapshots, but a new leader epoch starts at the log start of every
// partition, so a consumer that read them under the old encoding sees a
// truncation (OffsetForLeaderEpoch, or a diverging epoch in Fetch) and
// reads them again, as after a Kafka unclean leader election. raised says
// whether it started one.
//
// An index that never recorded an encoding (new, or written by a lakegw
// that did not record it) takes this one without a new epoch: what it
// was served under is not known, and every consumer of an upgraded
// gateway would otherwise read its topics again.
func (t *Index) SetEncoding(ctx context.Context, encoding string) (raised bool, err error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.st.Encoding == encoding {
		return false, nil
	}
	st := t.st
	st.Encoding = encoding
	parts := t.parts
	if t.st.Encoding != "" {
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
	} else if err := t.store.AppendSegments(ctx, st, nil); err != nil {
		// The segments are unchanged: only the topic state is written.
		return false, err
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
