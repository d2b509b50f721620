package txn

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/lakegw/lakegw/internal/kafkaseq"
)

// InitProducerID answers InitProducerId with a transactional id: the id's
// producer id under the next epoch (a new id's: a new producer id, epoch
// 0). Any transaction the id has open is aborted first and any decided
// commit completed, so that the older producer is fenced and the new one
// starts clean. pid and epoch, when not -1, are the asker's own (KIP-360:
// a producer bumping its epoch after an abortable error); a producer that
// a newer epoch fenced gets ErrProducerFenced.
func (c *Coordinator) InitProducerID(ctx context.Context, id string, timeoutMs int32, pid int64, epoch int16) (int64, int16, error) {
	if id == "" || len(id) > MaxIDBytes {
		return -1, -1, fmt.Errorf("%w: %d bytes, want 1 to %d", ErrInvalidID, len(id), MaxIDBytes)
	}
	if timeoutMs <= 0 || time.Duration(timeoutMs)*time.Millisecond > c.opts.MaxTimeout {
		return -1, -1, fmt.Errorf("%w: transaction.timeout.ms=%d, this gateway allows 1 to %d (--transaction-max-timeout)",
			ErrInvalidTimeout, timeoutMs, c.opts.MaxTimeout.Milliseconds())
	}
	var e *entry
	for {
		got, rec, created, err := c.getOrCreate(ctx, id, timeoutMs)
		switch {
		case err != nil:
			return -1, -1, err
		case created:
			return rec.ProducerID, rec.Epoch, nil
		}
		got.mu.Lock()
		if !got.removed {
			e = got
			break
		}
		// Forgotten (or never saved) while this request waited: the id
		// starts again.
		got.mu.Unlock()
		if err := ctx.Err(); err != nil {
			return -1, -1, err
		}
	}
	defer e.mu.Unlock()
	r := e.rec
	if pid >= 0 {
		switch {
		case pid != r.ProducerID:
			return -1, -1, fmt.Errorf("%w: %q holds producer id %d, not %d", ErrInvalidProducerIDMapping, id, r.ProducerID, pid)
		case epoch == r.PrevEpoch && r.PrevEpoch >= 0 && r.State == StateEmpty:
			// A retry of the bump that made the current epoch.
			return r.ProducerID, r.Epoch, nil
		case epoch != r.Epoch:
			return -1, -1, fmt.Errorf("%w: %q is at epoch %d, the asker at %d", ErrProducerFenced, id, r.Epoch, epoch)
		}
	}
	switch r.State {
	case StatePrepareCommit:
		if err := c.completeCommitLocked(e); err != nil {
			return -1, -1, fmt.Errorf("%w: %w", ErrConcurrentTransactions, err)
		}
	case StateOngoing:
		c.log.Info().Str("transactional_id", id).Int64("producer_id", r.ProducerID).Int16("epoch", r.Epoch).
			Msg("a new producer of the transactional id aborts its open transaction")
		if err := c.abortLocked(ctx, e, false); err != nil {
			return -1, -1, err
		}
	}
	next := e.rec
	next.PrevEpoch = next.Epoch
	next.Epoch++
	if e.rec.Epoch >= math.MaxInt16-1 {
		// Epochs ran out: a new producer id, as Kafka gives.
		npid, err := kafkaseq.NewProducerID()
		if err != nil {
			return -1, -1, err
		}
		next.ProducerID, next.Epoch, next.PrevEpoch = npid, 0, -1
	}
	next.State, next.TimeoutMs, next.Sequences = StateEmpty, timeoutMs, nil
	next.UpdateMs = c.opts.Now().UnixMilli()
	if err := c.store.SaveTransaction(ctx, next); err != nil {
		return -1, -1, fmt.Errorf("%w: %w", ErrStore, err)
	}
	e.set(next)
	clear(e.recent)
	return next.ProducerID, next.Epoch, nil
}

// MaxIDBytes bounds a transactional id, as a group id is bounded: what a
// client sends, the coordinator keeps.
const MaxIDBytes = 249

// getOrCreate returns the id's entry, creating (and saving) it at epoch 0
// when it is new: then created is set and rec is what was saved.
func (c *Coordinator) getOrCreate(ctx context.Context, id string, timeoutMs int32) (e *entry, rec Record, created bool, err error) {
	if e := c.get(id); e != nil {
		return e, Record{}, false, nil
	}
	if err := c.makeRoom(ctx); err != nil {
		return nil, Record{}, false, err
	}
	pid, err := kafkaseq.NewProducerID()
	if err != nil {
		return nil, Record{}, false, err
	}
	now := c.opts.Now().UnixMilli()
	rec = Record{ID: id, ProducerID: pid, PrevEpoch: -1, TimeoutMs: timeoutMs, State: StateEmpty, StartMs: -1, UpdateMs: now}
	e = newEntry(rec)
	c.mu.Lock()
	if old := c.ids[id]; old != nil {
		// Created by a concurrent request meanwhile.
		c.mu.Unlock()
		return old, Record{}, false, nil
	}
	c.ids[id] = e
	e.mu.Lock()
	c.mu.Unlock()
	defer e.mu.Unlock()
	if err := c.store.SaveTransaction(ctx, rec); err != nil {
		e.removed = true // requests waiting on it start again
		c.mu.Lock()
		delete(c.ids, id)
		c.mu.Unlock()
		return nil, Record{}, false, fmt.Errorf("%w: %w", ErrStore, err)
	}
	c.log.Debug().Str("transactional_id", id).Int64("producer_id", pid).Msg("new transactional id")
	return e, rec, true, nil
}

// MinIdleToForget is how long an id must have been unused before a
// coordinator at MaxTransactionalIDs forgets it to make room: a producer
// between its transactions is not fenced for a stranger's sake.
const MinIdleToForget = time.Hour

// makeRoom forgets the longest idle id without an open transaction when
// MaxTransactionalIDs are kept.
func (c *Coordinator) makeRoom(ctx context.Context) error {
	c.mu.Lock()
	if len(c.ids) < c.opts.MaxTransactionalIDs {
		c.mu.Unlock()
		return nil
	}
	var oldest *entry
	var at int64
	for _, e := range c.ids {
		if !e.mu.TryLock() {
			continue
		}
		r := e.rec
		e.mu.Unlock()
		if r.State == StateOngoing || r.State == StatePrepareCommit {
			continue
		}
		if oldest == nil || r.UpdateMs < at {
			oldest, at = e, r.UpdateMs
		}
	}
	c.mu.Unlock()
	if oldest == nil || c.opts.Now().Sub(time.UnixMilli(at)) < MinIdleToForget {
		return fmt.Errorf("%w: %d, none idle for %v", ErrTooManyTransactionalIDs, c.opts.MaxTransactionalIDs, MinIdleToForget)
	}
	oldest.mu.Lock()
	defer oldest.mu.Unlock()
	if s := oldest.rec.State; s == StateOngoing || s == StatePrepareCommit {
		return fmt.Errorf("%w: %d in use", ErrTooManyTransactionalIDs, c.opts.MaxTransactionalIDs)
	}
	return c.forgetLocked(ctx, oldest)
}

// lockProducer returns the id's entry, locked, when pid and epoch are its
// current producer.
func (c *Coordinator) lockProducer(id string, pid int64, epoch int16) (*entry, error) {
	e := c.get(id)
	if e == nil {
		return nil, fmt.Errorf("%w: %q (InitProducerId first)", ErrInvalidProducerIDMapping, id)
	}
	e.mu.Lock()
	if e.removed {
		e.mu.Unlock()
		return nil, fmt.Errorf("%w: %q was forgotten (InitProducerId first)", ErrInvalidProducerIDMapping, id)
	}
	if err := checkProducerLocked(e, pid, epoch); err != nil {
		e.mu.Unlock()
		return nil, err
	}
	return e, nil
}

// checkProducerLocked says whether pid and epoch are the id's current
// producer; e.mu held.
func checkProducerLocked(e *entry, pid int64, epoch int16) error {
	r := &e.rec
	switch {
	case pid != r.ProducerID:
		return fmt.Errorf("%w: transactional id %q holds producer id %d, not %d", ErrInvalidProducerIDMapping, r.ID, r.ProducerID, pid)
	case epoch < r.Epoch:
		return fmt.Errorf("%w: transactional id %q is at epoch %d, the producer at %d", ErrProducerFenced, r.ID, r.Epoch, epoch)
	case epoch > r.Epoch:
		return fmt.Errorf("%w: transactional id %q is at epoch %d, not %d", ErrInvalidProducerIDMapping, r.ID, r.Epoch, epoch)
	}
	return nil
}
