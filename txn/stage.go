package txn

import (
	"context"
	"fmt"
	"slices"

	"github.com/lakegw/lakegw/internal/kafkaseq"
)

// Stage stages one record batch of the producer's open transaction,
// durably: when it returns nil the batch survives a restart and commits
// with the transaction. dup says the batch is a retry of one already
// staged (nothing is staged again). A batch must be for a partition the
// transaction added, and follow the producer's previous sequence there.
func (c *Coordinator) Stage(ctx context.Context, id string, pid int64, epoch int16, b StagedBatch) (dup bool, err error) {
	e, err := c.lockProducer(id, pid, epoch)
	if err != nil {
		return false, err
	}
	defer e.mu.Unlock()
	tp := TopicPartition{b.Topic, b.Partition}
	if e.rec.State != StateOngoing || !slices.Contains(e.rec.Partitions, tp) {
		return false, fmt.Errorf("%w: records for %s/%d, which transaction %q (%s) did not add (AddPartitionsToTxn)",
			ErrInvalidTxnState, b.Topic, b.Partition, id, e.rec.State)
	}
	for _, r := range e.recent[tp] {
		if r.first == b.FirstSeq && r.last == b.LastSeq {
			return true, nil
		}
	}
	next := e.rec
	i := slices.IndexFunc(next.Sequences, func(s PartitionSequence) bool { return s.TopicPartition == tp })
	if i >= 0 && !kafkaseq.Follows(next.Sequences[i].Last, b.FirstSeq) {
		last := next.Sequences[i].Last
		if kafkaseq.Behind(last, b.FirstSeq) {
			return false, fmt.Errorf("%w: producer %d %s/%d sequence %d..%d was staged before (last is %d)",
				ErrDuplicateSequence, pid, b.Topic, b.Partition, b.FirstSeq, b.LastSeq, last)
		}
		return false, fmt.Errorf("%w: producer %d %s/%d sent sequence %d after %d", ErrOutOfOrderSequence, pid, b.Topic, b.Partition, b.FirstSeq, last)
	}
	if next.StagedBytes+int64(len(b.Batch)) > c.opts.MaxTransactionBytes {
		return false, fmt.Errorf("%w: transaction %q would stage %d bytes, this gateway takes %d (--transaction-max-bytes)",
			ErrTransactionTooLarge, id, next.StagedBytes+int64(len(b.Batch)), c.opts.MaxTransactionBytes)
	}
	next.Sequences = slices.Clone(next.Sequences)
	if i >= 0 {
		next.Sequences[i].Last = b.LastSeq
	} else {
		next.Sequences = append(next.Sequences, PartitionSequence{TopicPartition: tp, Last: b.LastSeq})
	}
	next.StagedBytes += int64(len(b.Batch))
	next.Batches++
	next.UpdateMs = c.opts.Now().UnixMilli()
	b.N = next.Batches
	if err := c.store.StageBatch(ctx, next, b); err != nil {
		return false, fmt.Errorf("%w: %w", ErrStore, err)
	}
	e.rec = next
	rs := append(e.recent[tp], seqRange{b.FirstSeq, b.LastSeq})
	if len(rs) > recentKept {
		rs = rs[len(rs)-recentKept:]
	}
	e.recent[tp] = rs
	return false, nil
}
