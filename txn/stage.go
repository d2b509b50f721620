package txn

import (
	"context"
	"fmt"
	"slices"

	"github.com/lakegw/lakegw/internal/kafkaseq"
)

// Stage stages record batches of the producer's open transaction (one
// produce request's), durably and in one write to the store: when errs[i]
// is nil batch i survives a restart and commits with the transaction. A
// retry of a batch already staged is accepted and not staged again. A
// batch must be for a partition the transaction added, and follow the
// producer's previous sequence there; one refused does not stop the
// others (each partition's batch is answered on its own, as Kafka does).
func (c *Coordinator) Stage(ctx context.Context, id string, pid int64, epoch int16, batches []StagedBatch) (errs []error) {
	errs = make([]error, len(batches))
	e, err := c.lockProducer(id, pid, epoch)
	if err != nil {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	defer e.mu.Unlock()
	next := e.rec
	next.Sequences = slices.Clone(next.Sequences)
	var staged []StagedBatch
	var at []int // staged[j] answers batches[at[j]]
	for i, b := range batches {
		dup, err := c.checkStage(e, &next, b)
		switch {
		case err != nil:
			errs[i] = err
		case !dup:
			next.Batches++
			b.N = next.Batches
			staged = append(staged, b)
			at = append(at, i)
		}
	}
	if len(staged) == 0 {
		return errs
	}
	next.UpdateMs = c.opts.Now().UnixMilli()
	if err := c.store.StageBatches(ctx, next, staged); err != nil {
		for _, i := range at {
			errs[i] = fmt.Errorf("%w: %w", ErrStore, err)
		}
		return errs
	}
	e.set(next)
	for _, b := range staged {
		tp := TopicPartition{b.Topic, b.Partition}
		rs := append(e.recent[tp], seqRange{b.FirstSeq, b.LastSeq})
		if len(rs) > recentKept {
			rs = rs[len(rs)-recentKept:]
		}
		e.recent[tp] = rs
	}
	return errs
}

// checkStage checks b against the transaction as next has it (the
// batches before it in the request applied) and applies it to next's
// sequences and size; dup says it is a retry of a batch staged before.
// e.mu held.
func (c *Coordinator) checkStage(e *entry, next *Record, b StagedBatch) (dup bool, err error) {
	tp := TopicPartition{b.Topic, b.Partition}
	if next.State != StateOngoing || !slices.Contains(next.Partitions, tp) {
		return false, fmt.Errorf("%w: records for %s/%d, which transaction %q (%s) did not add (AddPartitionsToTxn)",
			ErrInvalidTxnState, b.Topic, b.Partition, next.ID, next.State)
	}
	for _, r := range e.recent[tp] {
		if r.first == b.FirstSeq && r.last == b.LastSeq {
			return true, nil
		}
	}
	i := slices.IndexFunc(next.Sequences, func(s PartitionSequence) bool { return s.TopicPartition == tp })
	if i >= 0 && !kafkaseq.Follows(next.Sequences[i].Last, b.FirstSeq) {
		last := next.Sequences[i].Last
		if kafkaseq.Behind(last, b.FirstSeq) {
			return false, fmt.Errorf("%w: producer %d %s/%d sequence %d..%d was staged before (last is %d)",
				ErrDuplicateSequence, next.ProducerID, b.Topic, b.Partition, b.FirstSeq, b.LastSeq, last)
		}
		return false, fmt.Errorf("%w: producer %d %s/%d sent sequence %d after %d", ErrOutOfOrderSequence, next.ProducerID, b.Topic, b.Partition, b.FirstSeq, last)
	}
	size := max(b.Size, int64(len(b.Batch)))
	if next.StagedBytes+size > c.opts.MaxTransactionBytes {
		return false, fmt.Errorf("%w: transaction %q would hold %d bytes decoded, this gateway takes %d (--transaction-max-bytes)",
			ErrTransactionTooLarge, next.ID, next.StagedBytes+size, c.opts.MaxTransactionBytes)
	}
	if i >= 0 {
		next.Sequences[i].Last = b.LastSeq
	} else {
		next.Sequences = append(next.Sequences, PartitionSequence{TopicPartition: tp, Last: b.LastSeq})
	}
	next.StagedBytes += size
	return false, nil
}
