package txn

import (
	"context"
	"fmt"
	"slices"
)

// AddPartitions adds partitions to the producer's transaction, beginning
// one when none is open. errs has one entry per partition: when any
// partition is refused (an unknown or read-only topic), nothing is added
// and the others are ErrNotAttempted, as Kafka answers.
func (c *Coordinator) AddPartitions(ctx context.Context, id string, pid int64, epoch int16, parts []TopicPartition) (errs []error, err error) {
	errs = make([]error, len(parts))
	refused := false
	for i, p := range parts {
		if perr := c.tables.CheckPartition(ctx, p.Topic, p.Partition); perr != nil {
			errs[i], refused = perr, true
		}
	}
	if refused {
		for i := range errs {
			if errs[i] == nil {
				errs[i] = ErrNotAttempted
			}
		}
		return errs, nil
	}
	err = c.update(ctx, id, pid, epoch, func(r *Record) error {
		for _, p := range parts {
			if !slices.Contains(r.Partitions, p) {
				r.Partitions = append(r.Partitions, p)
			}
		}
		return nil
	})
	return errs, err
}

// ErrNotAttempted answers the partitions of an AddPartitions that another
// partition's refusal stopped (OPERATION_NOT_ATTEMPTED).
var ErrNotAttempted = fmt.Errorf("not attempted: another partition of the request was refused")

// AddOffsets adds a consumer group to the producer's transaction (its
// offsets commit with it), beginning one when none is open.
func (c *Coordinator) AddOffsets(ctx context.Context, id string, pid int64, epoch int16, group string) error {
	return c.update(ctx, id, pid, epoch, func(r *Record) error {
		if slices.Contains(r.Groups, group) {
			return nil
		}
		if len(r.Groups) >= MaxGroupsPerTransaction {
			return fmt.Errorf("%w: %q adds group %q to %d others, at most %d", ErrTooManyGroups, id, group, len(r.Groups), MaxGroupsPerTransaction)
		}
		r.Groups = append(r.Groups, group)
		return nil
	})
}

// MaxGroupsPerTransaction bounds the consumer groups one transaction
// commits offsets for (a consume-transform-produce job has one).
const MaxGroupsPerTransaction = 100

// update applies add to the id's open transaction, beginning it when the
// id has none, and saves the record.
func (c *Coordinator) update(ctx context.Context, id string, pid int64, epoch int16, add func(*Record) error) error {
	e, err := c.lockProducer(id, pid, epoch)
	if err != nil {
		return err
	}
	defer e.mu.Unlock()
	next := e.rec
	now := c.opts.Now().UnixMilli()
	switch next.State {
	case StatePrepareCommit, StatePrepareAbort:
		return fmt.Errorf("%w: %q is %s", ErrConcurrentTransactions, id, next.State)
	case StateOngoing:
		next.Partitions = slices.Clone(next.Partitions)
		next.Groups = slices.Clone(next.Groups)
	default:
		next.State, next.Number, next.StartMs = StateOngoing, next.Number+1, now
		next.Partitions, next.Groups, next.Committed = nil, nil, nil
		next.StagedBytes, next.Batches = 0, 0
	}
	if err := add(&next); err != nil {
		return err
	}
	next.UpdateMs = now
	if err := c.store.SaveTransaction(ctx, next); err != nil {
		return fmt.Errorf("%w: %w", ErrStore, err)
	}
	if e.rec.State != StateOngoing {
		c.log.Debug().Str("transactional_id", id).Int64("transaction", next.Number).Msg("transaction begun")
	}
	e.set(next)
	return nil
}

// StageOffsets stages consumer group offsets in the producer's open
// transaction (TxnOffsetCommit): they are committed with it, and until it
// ends an OffsetFetch that requires stable offsets is told to wait.
func (c *Coordinator) StageOffsets(ctx context.Context, id string, pid int64, epoch int16, offs []StagedOffset) error {
	e, err := c.lockProducer(id, pid, epoch)
	if err != nil {
		return err
	}
	defer e.mu.Unlock()
	if e.rec.State != StateOngoing {
		return fmt.Errorf("%w: TxnOffsetCommit with %q %s", ErrInvalidTxnState, id, e.rec.State)
	}
	next := e.rec
	next.Groups = slices.Clone(next.Groups)
	for _, o := range offs {
		if !slices.Contains(next.Groups, o.Group) {
			return fmt.Errorf("%w: group %q was not added to the transaction (AddOffsetsToTxn)", ErrInvalidTxnState, o.Group)
		}
	}
	next.UpdateMs = c.opts.Now().UnixMilli()
	if err := c.store.StageOffsets(ctx, next, offs); err != nil {
		return fmt.Errorf("%w: %w", ErrStore, err)
	}
	e.set(next)
	c.mu.Lock()
	for _, o := range offs {
		c.markUnstableLocked(e, offsetKey{o.Group, o.Topic, o.Partition})
	}
	c.mu.Unlock()
	return nil
}

// Verify checks, adding nothing, that parts are in the producer's open
// transaction (AddPartitionsToTxn v4's VerifyOnly): one error per
// partition, nil where it is.
func (c *Coordinator) Verify(id string, pid int64, epoch int16, parts []TopicPartition) []error {
	errs := make([]error, len(parts))
	e := c.get(id)
	if e == nil {
		for i := range errs {
			errs[i] = fmt.Errorf("%w: %q", ErrInvalidProducerIDMapping, id)
		}
		return errs
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	err := checkProducerLocked(e, pid, epoch)
	for i, p := range parts {
		switch {
		case err != nil:
			errs[i] = err
		case e.rec.State != StateOngoing || !slices.Contains(e.rec.Partitions, p):
			errs[i] = fmt.Errorf("%w: %s/%d is not in transaction %q", ErrInvalidTxnState, p.Topic, p.Partition, id)
		}
	}
	return errs
}
