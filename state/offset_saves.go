package state

import (
	"context"
	"errors"
	"sync"

	"github.com/lakegw/lakegw/protocol/groups"
)

// offsetSaves batches concurrent saves of committed offsets into one
// transaction. With synchronous=FULL every transaction waits for a sync of
// the disk; many groups committing at once would otherwise queue behind
// one sync each (and behind SQLite's busy-wait sleeps, as the pool's
// connections take turns on the write lock). One save writes at a time;
// whoever gets to write takes every save queued so far with its own, and
// the saves it took are answered when it is done.
type offsetSaves struct {
	writing chan struct{} // 1-slot: held by the save that writes

	mu     sync.Mutex
	queued []*offsetSave
}

type offsetSave struct {
	offs []groups.CommittedOffset
	done chan struct{} // closed once written (or failed); err is set then
	err  error
}

func newOffsetSaves() *offsetSaves {
	return &offsetSaves{writing: make(chan struct{}, 1)}
}

// save queues offs and returns once a transaction holding them committed,
// or failed. The transaction is not cancelled by ctx: it may hold other
// callers' offsets, and it is short. ctx bounds only the wait for a turn
// to write; a caller that gives up may still have its offsets written, as
// a Kafka client whose request timed out cannot know either.
func (q *offsetSaves) save(ctx context.Context, offs []groups.CommittedOffset, write func(context.Context, []groups.CommittedOffset) error) error {
	me := &offsetSave{offs: offs, done: make(chan struct{})}
	q.mu.Lock()
	q.queued = append(q.queued, me)
	q.mu.Unlock()

	select {
	case <-me.done: // a writer took it
		return me.err
	case q.writing <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	defer func() { <-q.writing }()
	select {
	case <-me.done: // written while we waited for our turn
		return me.err
	default:
	}
	q.mu.Lock()
	batch := q.queued
	q.queued = nil
	q.mu.Unlock()

	var all []groups.CommittedOffset
	for _, s := range batch {
		all = append(all, s.offs...)
	}
	wctx := context.WithoutCancel(ctx)
	err := write(wctx, all)
	for _, s := range batch {
		s.err = err
	}
	if errors.Is(err, groups.ErrShardNotOwned) && len(batch) > 1 {
		// One group's shard moved to another gateway; the others' did
		// not, and must not be told NOT_COORDINATOR for it: each save
		// is written on its own.
		for _, s := range batch {
			s.err = write(wctx, s.offs)
		}
	}
	for _, s := range batch {
		close(s.done)
	}
	return me.err
}
