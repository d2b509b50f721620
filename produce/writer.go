package produce

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/rs/zerolog"
)

// writer is the single writer of one produced topic's table on this
// gateway: it takes the batches every request accepts (queue) and commits
// them together, one Iceberg commit per group through its target (a raw
// topic's table, a primary-key table), in the order they were accepted.
type writer struct {
	svc        *Service
	topic      string
	partitions int32
	target     target
	// interval is the least time between two commits: the table's
	// ConfigCommitInterval, else the gateway's CommitInterval.
	interval time.Duration
	log      zerolog.Logger

	mu sync.Mutex
	// closed is set once run stops taking batches: Submit refuses
	// rather than queue a batch no commit would take.
	closed bool
	seq    *seqState
	queue  []*ticket
	queued int64 // bytes in queue
	wake   chan struct{}
	done   chan struct{}
	// stop ends run (a deleted topic); the Service's context ends it too.
	stop context.CancelFunc
}

// target is the table a writer commits to.
type target interface {
	// prepare checks a batch's records against the table (and keeps what
	// the commit needs of them on t) before the batch is accepted.
	prepare(t *ticket) error
	// commit writes group in one Iceberg commit whose summary carries
	// summary(bases) (bases: each batch's first offset, nil where the
	// commit decides them) and returns each batch's first offset.
	commit(ctx context.Context, group []*ticket, summary func(bases []int64) (iceberg.Properties, error)) (bases []int64, snapshotID int64, err error)
}

// maxCommitAttempts bounds the retries of a commit that keeps losing to
// other committers (maintenance, another gateway).
const maxCommitAttempts = 20

// run commits groups until ctx ends; the batches still queued then fail
// with ErrClosed.
func (w *writer) run(ctx context.Context) {
	defer close(w.done)
	last := time.Time{}
	for {
		select {
		case <-ctx.Done():
			w.failQueued(ErrClosed)
			return
		case <-w.wake:
		}
		// Group commit: at most one commit per interval, so a burst of
		// producers shares one snapshot; a full group goes at once.
		if wait := w.interval - time.Since(last); wait > 0 {
			timer := time.NewTimer(wait)
			for full := false; !full; {
				select {
				case <-ctx.Done():
					timer.Stop()
					w.failQueued(ErrClosed)
					return
				case <-timer.C:
					full = true
				case <-w.wake:
					w.mu.Lock()
					full = w.queued >= w.svc.cfg.MaxCommitBytes
					w.mu.Unlock()
					if full {
						timer.Stop()
					}
				}
			}
		}
		w.mu.Lock()
		group := w.queue
		w.queue, w.queued = nil, 0
		w.mu.Unlock()
		if len(group) == 0 {
			continue
		}
		last = time.Now()
		w.commitGroup(ctx, group)
	}
}

// commitGroup commits group and wakes its requests.
func (w *writer) commitGroup(ctx context.Context, group []*ticket) {
	start := time.Now()
	bases, snapshotID, err := w.target.commit(ctx, group, func(bases []int64) (iceberg.Properties, error) {
		return w.producersSummary(group, bases)
	})
	w.mu.Lock()
	if err != nil {
		// Every batch accepted since depends on this group's sequences:
		// all fail, and every producer retries from its committed state.
		rest := w.queue
		w.queue, w.queued = nil, 0
		w.seq.failed()
		w.mu.Unlock()
		w.log.Warn().Err(err).Int("batches", len(group)+len(rest)).Msg("commit of produced records failed; their producers retry")
		for _, t := range append(group, rest...) {
			t.finish(-1, fmt.Errorf("%w: %w", ErrCommitFailed, err))
			w.svc.release(t.size)
		}
		return
	}
	for i, t := range group {
		t.res.BaseOffset = bases[i]
	}
	w.seq.committed(group)
	w.mu.Unlock()
	for i, t := range group {
		t.finish(bases[i], nil)
		w.svc.release(t.size)
	}
	w.log.Debug().Int64("snapshot_id", snapshotID).Int("batches", len(group)).Dur("took", time.Since(start)).Msg("committed produced records")
	if w.svc.cfg.OnCommit != nil {
		w.svc.cfg.OnCommit(w.topic)
	}
}

// producersSummary is the summary property carrying the state of the
// group's producers once a commit holds it at bases (nil: not known
// before the commit; their offsets are then recorded as -1).
func (w *writer) producersSummary(group []*ticket, bases []int64) (iceberg.Properties, error) {
	if bases == nil {
		bases = make([]int64, len(group))
		for i := range bases {
			bases[i] = -1
		}
	}
	w.mu.Lock()
	ps := w.seq.after(group, bases)
	w.mu.Unlock()
	if len(ps) == 0 {
		return iceberg.Properties{}, nil
	}
	v, err := encodeProducers(ps)
	if err != nil {
		return nil, err
	}
	return iceberg.Properties{SummaryProducers: v}, nil
}

// failQueued fails every queued batch and closes the writer.
func (w *writer) failQueued(err error) {
	w.mu.Lock()
	w.closed = true
	q := w.queue
	w.queue, w.queued = nil, 0
	w.seq.failed()
	w.mu.Unlock()
	for _, t := range q {
		t.finish(-1, err)
		w.svc.release(t.size)
	}
}
