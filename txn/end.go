package txn

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/lakegw/lakegw/internal/kafkaseq"
)

// EndTxn commits or aborts the producer's transaction. A commit returns
// once every table the transaction wrote holds its records and its group
// offsets are committed; when that fails part way the decision stands
// (ErrConcurrentTransactions: the producer retries EndTxn, and the
// coordinator completes it meanwhile). A retried EndTxn of a transaction
// already ended the same way succeeds.
func (c *Coordinator) EndTxn(ctx context.Context, id string, pid int64, epoch int16, commit bool) error {
	e, err := c.lockProducer(id, pid, epoch)
	if err != nil {
		return err
	}
	defer e.mu.Unlock()
	verb := map[bool]string{true: "commit", false: "abort"}[commit]
	switch s := e.rec.State; {
	case s == StateOngoing && commit:
		next := e.rec
		next.State, next.Committed = StatePrepareCommit, nil
		next.UpdateMs = c.opts.Now().UnixMilli()
		// Pending before the decision is durable: a writer carries the
		// marker of a commit that lands from then on.
		c.setPending(Marker(next), true)
		if err := c.store.SaveTransaction(ctx, next); err != nil {
			c.setPending(Marker(next), false)
			return fmt.Errorf("%w: %w", ErrStore, err)
		}
		e.set(next)
		if err := c.completeCommitLocked(e); err != nil {
			return fmt.Errorf("%w: committing %q: %w", ErrConcurrentTransactions, id, err)
		}
		return nil
	case s == StateOngoing:
		return c.abortLocked(ctx, e, false)
	case s == StatePrepareCommit && commit:
		if err := c.completeCommitLocked(e); err != nil {
			return fmt.Errorf("%w: committing %q: %w", ErrConcurrentTransactions, id, err)
		}
		return nil
	case s == StateCompleteCommit && commit, s == StateCompleteAbort && !commit:
		return nil // a retry of the EndTxn that ended it
	}
	return fmt.Errorf("%w: %s of %q, which is %s", ErrInvalidTxnState, verb, id, e.rec.State)
}

// completeCommitLocked carries out a decided commit: each table not yet
// holding the transaction's records commits them (a table whose history
// already names the transaction did before a crash or a lost answer), then
// the staged offsets are committed and the staged records forgotten. It
// runs under the coordinator's context, whoever asked. e.mu held.
func (c *Coordinator) completeCommitLocked(e *entry) error {
	ctx := c.ctx
	start := time.Now()
	r := e.rec
	marker := Marker(r)
	// A transaction's commit holds its records decoded: completions share
	// MaxTransactionBytes of them.
	claim := min(max(r.StagedBytes, 1), c.opts.MaxTransactionBytes)
	if err := c.decoding.Acquire(ctx, claim); err != nil {
		return fmt.Errorf("%w: %w", ErrClosed, err)
	}
	defer c.decoding.Release(claim)
	for _, topic := range topicsOf(r.Partitions) {
		if slices.Contains(r.Committed, topic) {
			continue
		}
		err := c.commitTopic(ctx, r.ID, topic, marker)
		if errors.Is(err, ErrTopicGone) {
			// Nothing can hold these records any more; the rest of the
			// transaction still commits.
			c.log.Warn().Err(err).Str("transactional_id", r.ID).Str("topic", topic).
				Msg("a committed transaction's topic was deleted before its records were written; they are dropped")
		} else if err != nil {
			return err
		}
		next := e.rec
		next.Committed = append(slices.Clone(next.Committed), topic)
		if err := c.store.SaveTransaction(ctx, next); err != nil {
			return fmt.Errorf("%w: %w", ErrStore, err)
		}
		e.set(next)
	}
	if len(r.Groups) > 0 {
		offs, err := c.store.StagedOffsets(ctx, r.ID)
		if err != nil {
			return fmt.Errorf("%w: staged offsets: %w", ErrStore, err)
		}
		if len(offs) > 0 {
			if err := c.offsets.CommitOffsets(ctx, offs); err != nil {
				return fmt.Errorf("commit the transaction's group offsets: %w", err)
			}
		}
	}
	if err := c.finishLocked(ctx, e, StateCompleteCommit, false); err != nil {
		return err
	}
	c.log.Debug().Str("transactional_id", r.ID).Str("transaction", marker).Int("partitions", len(r.Partitions)).
		Int64("bytes", r.StagedBytes).Dur("took", time.Since(start)).Msg("transaction committed")
	return nil
}

// commitTopic commits the transaction's staged records of topic, unless
// the table holds them already.
func (c *Coordinator) commitTopic(ctx context.Context, id, topic, marker string) error {
	landed, err := c.tables.Committed(ctx, topic, marker)
	if err != nil {
		return fmt.Errorf("is transaction %s in %s: %w", marker, topic, err)
	}
	if landed {
		return nil
	}
	batches, err := c.store.StagedBatches(ctx, id, topic)
	if err != nil {
		return fmt.Errorf("%w: staged records of %s: %w", ErrStore, topic, err)
	}
	if len(batches) == 0 {
		return nil
	}
	if err := c.tables.Commit(ctx, topic, marker, batches); err != nil {
		return fmt.Errorf("commit transaction %s to %s: %w", marker, topic, err)
	}
	return nil
}

// abortLocked forgets the open transaction's staged records and offsets;
// fence also bumps the epoch, so that the producer whose transaction timed
// out is told it was fenced. e.mu held.
func (c *Coordinator) abortLocked(ctx context.Context, e *entry, fence bool) error {
	if err := c.finishLocked(ctx, e, StateCompleteAbort, fence); err != nil {
		return err
	}
	c.log.Debug().Str("transactional_id", e.rec.ID).Bool("fenced", fence).Msg("transaction aborted")
	return nil
}

// finishLocked ends the transaction in state, forgetting what it staged.
func (c *Coordinator) finishLocked(ctx context.Context, e *entry, state State, fence bool) error {
	marker := Marker(e.rec)
	next := e.rec
	next.State, next.StartMs = state, -1
	next.Partitions, next.Groups, next.Committed = nil, nil, nil
	next.StagedBytes, next.Batches = 0, 0
	next.UpdateMs = c.opts.Now().UnixMilli()
	if fence {
		if next.Epoch >= math.MaxInt16-1 {
			// No epoch left to fence with: a new producer id does.
			pid, err := kafkaseq.NewProducerID()
			if err != nil {
				return err
			}
			next.ProducerID, next.Epoch = pid, -1
		}
		next.Epoch++
		next.Sequences, next.PrevEpoch = nil, -1
	}
	if err := c.store.ClearStaged(ctx, next); err != nil {
		return fmt.Errorf("%w: end transaction of %q: %w", ErrStore, next.ID, err)
	}
	c.setPending(marker, false)
	e.set(next)
	clear(e.recent)
	c.clearUnstable(e)
	return nil
}

// Marker names a transaction in the snapshot summaries of its commits:
// producer id, epoch and the id's transaction number.
func Marker(r Record) string {
	return fmt.Sprintf("%d.%d.%d", r.ProducerID, r.Epoch, r.Number)
}
