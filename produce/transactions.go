package produce

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/iceberg-go/table"
)

// SummaryTransactions names, in a commit's snapshot summary, the Kafka
// transactions whose records the commit holds (their txn.Marker, comma
// separated): a coordinator completing a transaction after a crash or a
// lost answer finds whether a table already holds it.
const SummaryTransactions = "lakegw.transactions"

// Check checks batches for topic as Submit checks them before accepting
// them (the partition, every record against the table), without queuing
// them: a transaction stages only batches its commit will take. errs has
// one entry per batch (nil: accepted).
func (s *Service) Check(ctx context.Context, topic string, batches []Batch) []error {
	errs := make([]error, len(batches))
	w, err := s.writer(ctx, topic)
	if err != nil {
		for i := range errs {
			errs[i] = err
		}
		return errs
	}
	for i := range batches {
		b := &batches[i]
		if err := w.checkPartition(b.Partition); err != nil {
			errs[i] = err
			continue
		}
		if len(b.Records) == 0 {
			errs[i] = fmt.Errorf("%w: a batch without records", ErrInvalidRecord)
			continue
		}
		t := newTicket(b)
		errs[i] = w.target.prepare(t)
		t.finish(-1, nil) // releases what prepare kept
	}
	return errs
}

// CheckPartition says whether topic's partition takes records (nil), or
// why not.
func (s *Service) CheckPartition(ctx context.Context, topic string, partition int32) error {
	w, err := s.writer(ctx, topic)
	if err != nil {
		return err
	}
	return w.checkPartition(partition)
}

func (w *writer) checkPartition(p int32) error {
	if p < 0 || p >= w.partitions {
		return fmt.Errorf("%w: %s has %d partitions, not %d", ErrUnknownPartition, w.topic, w.partitions, p)
	}
	return nil
}

// CommitTransaction commits the batches of one Kafka transaction to topic,
// all in one Iceberg commit whose summary names marker
// (SummaryTransactions), and returns once it has landed or failed (then
// nothing of it is visible, unless TransactionCommitted finds it: a commit
// whose answer was lost). The batches are not checked against producer
// sequences: the transaction coordinator did when it staged them. ctx
// should not end before the commit does: a batch queued stays queued.
func (s *Service) CommitTransaction(ctx context.Context, topic, marker string, batches []Batch) error {
	if len(batches) == 0 {
		return nil
	}
	w, err := s.writer(ctx, topic)
	if err != nil {
		return err
	}
	tickets := make([]*ticket, len(batches))
	var total int64
	for i := range batches {
		b := batches[i]
		b.ProducerID = NoProducer
		if err := w.checkPartition(b.Partition); err != nil {
			return err
		}
		t := newTicket(&b)
		t.txn = marker
		if err := w.target.prepare(t); err != nil {
			for _, done := range tickets[:i] {
				done.finish(-1, err)
			}
			t.finish(-1, err)
			return fmt.Errorf("transaction %s no longer fits %s: %w", marker, topic, err)
		}
		tickets[i] = t
		total += t.size
	}
	// One claim on the memory bound for the whole transaction, at most
	// all of it: claims one batch at a time could wait on each other.
	claim := min(total, s.cfg.MaxPendingBytes)
	for _, t := range tickets {
		t.size = 0
	}
	tickets[0].size = claim
	fail := func(err error) error {
		for _, t := range tickets {
			t.finish(-1, err)
		}
		return err
	}
	if err := s.pending.Acquire(ctx, claim); err != nil {
		return fail(err)
	}
	w.mu.Lock()
	if w.unsure {
		w.mu.Unlock()
		if err := w.rereadState(ctx); err != nil {
			s.release(claim)
			return fail(err)
		}
		w.mu.Lock()
	}
	if w.closed {
		w.mu.Unlock()
		s.release(claim)
		return fail(ErrClosed)
	}
	// Queued together, under one lock: the writer takes its whole queue
	// into one commit, so the transaction's batches land together.
	w.queue = append(w.queue, tickets...)
	w.queued += claim
	w.urgent = true
	w.mu.Unlock()
	select {
	case w.wake <- struct{}{}:
	default:
	}
	var errs []error
	for _, t := range tickets {
		select {
		case <-t.done:
			if t.res.Err != nil {
				errs = append(errs, t.res.Err)
			}
		case <-ctx.Done():
			return fmt.Errorf("commit of transaction %s to %s: %w", marker, topic, ctx.Err())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("commit of transaction %s to %s: %w", marker, topic, errs[0])
	}
	return nil
}

// TransactionCommitted says whether topic's table holds the commit of the
// pending transaction marker names: the newest commit of a produce writer
// names it (it holds the records, or carries the marker of an earlier
// commit that does: markersFor). Only a pending transaction's answer is
// sure: a completed one's marker is no longer carried.
func (s *Service) TransactionCommitted(ctx context.Context, topic, marker string) (bool, error) {
	w, err := s.writer(ctx, topic)
	if err != nil {
		return false, err
	}
	tbl, err := w.target.load(ctx)
	if err != nil {
		return false, fmt.Errorf("load %s: %w", topic, err)
	}
	_, found := newestWriterMarkers(tbl)[marker]
	return found, nil
}

// markersFor is the SummaryTransactions of a commit of group: the
// transactions it holds records of, and those whose records an earlier
// commit holds and which are still pending. Called under w.mu; it prunes
// carried of the transactions no longer pending.
func (w *writer) markersFor(group []*ticket) string {
	var ms []string
	for _, t := range group {
		if t.txn != "" && !slices.Contains(ms, t.txn) {
			ms = append(ms, t.txn)
		}
	}
	pending := w.svc.cfg.TransactionPending
	for m := range w.carried {
		switch {
		case pending == nil || !pending(m):
			delete(w.carried, m)
		case !slices.Contains(ms, m):
			ms = append(ms, m)
		}
	}
	slices.Sort(ms)
	return strings.Join(ms, ",")
}

// newestWriterMarkers is what a writer starting on tbl carries (markersFor
// prunes it), and what TransactionCommitted reads: the
// SummaryTransactions of the newest snapshot
// of tbl's main history that a produce writer committed (one with
// SummaryCommitID; maintenance commits between do not carry markers).
func newestWriterMarkers(tbl *table.Table) map[string]struct{} {
	out := map[string]struct{}{}
	meta := tbl.Metadata()
	seen := 0
	for snap := tbl.CurrentSnapshot(); snap != nil && seen <= len(meta.Snapshots()); seen++ {
		if snap.Summary != nil && snap.Summary.Properties[SummaryCommitID] != "" {
			if v := snap.Summary.Properties[SummaryTransactions]; v != "" {
				for _, m := range strings.Split(v, ",") {
					out[m] = struct{}{}
				}
			}
			return out
		}
		if snap.ParentSnapshotID == nil {
			break
		}
		snap = meta.SnapshotByID(*snap.ParentSnapshotID)
	}
	return out
}
