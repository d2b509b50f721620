package offsets

import (
	"context"
	"fmt"
)

// StartAt makes an empty index start at bases[p] in partition p instead of
// 0: the table says where its retained history's offsets begin (a lakegw
// LSM table records its offsets in snapshot summaries), so a rebuilt index
// numbers every record as the lost one did. It fails on an index that
// holds segments: offsets are never moved under indexed records.
func (t *Index) StartAt(ctx context.Context, bases []int64) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if int32(len(bases)) != t.st.Partitions {
		return fmt.Errorf("topic %s: start offsets for %d partitions, want %d", t.st.Topic, len(bases), t.st.Partitions)
	}
	st := t.st
	st.Epochs = make([][]EpochStart, len(t.st.Epochs))
	for p := range t.parts {
		if len(t.parts[p]) > 0 {
			return fmt.Errorf("topic %s: cannot move the start of partition %d, which holds %d segments", t.st.Topic, p, len(t.parts[p]))
		}
		if bases[p] < 0 {
			return fmt.Errorf("topic %s: negative start offset %d for partition %d", t.st.Topic, bases[p], p)
		}
		es := t.st.Epochs[p]
		st.Epochs[p] = []EpochStart{{Epoch: es[len(es)-1].Epoch, StartOffset: bases[p]}}
	}
	if err := t.store.ReplaceTopic(ctx, st, nil); err != nil {
		return err
	}
	t.setState(st)
	return nil
}
