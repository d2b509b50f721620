package produce

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
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

	// commitMu is held for each commit, and by HoldCommits: another
	// committer of the table (a compaction's swap) then commits between two
	// of the writer's commits instead of racing them.
	commitMu sync.Mutex

	mu sync.Mutex
	// closed is set once run stops taking batches: Submit refuses
	// rather than queue a batch no commit would take.
	closed bool
	// unsure is set when a commit's outcome could not be found out: the
	// producers' state is read from the table (rereadState) before the next
	// batch is checked against it.
	unsure bool
	seq    *seqState
	// carried are the markers of transactions whose records a commit of
	// this writer holds, carried in every later commit while their
	// transaction is pending (Config.TransactionPending).
	carried map[string]struct{}
	// urgent has the next commit go without waiting out the interval: a
	// transaction's records, whose producer waits in EndTxn, already
	// came as one group (CommitTransaction).
	urgent bool
	queue  []*ticket
	queued int64 // bytes in queue
	wake   chan struct{}
	done   chan struct{}
	// answers takes committed groups to the answering goroutine
	// (answerLoop), which run starts and stops; nil outside run.
	answers chan answers
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
	// commit decides them) and says where the group landed.
	commit(ctx context.Context, group []*ticket, summary func(bases []int64) (iceberg.Properties, error)) (landed, error)
	// find looks for the commit whose summary carries id (SummaryCommitID)
	// after commit failed with maybeCommitted: found, it says where that
	// commit put group.
	find(ctx context.Context, id string, group []*ticket) (l landed, found bool, err error)
	// load is the table as it is now.
	load(ctx context.Context) (*table.Table, error)
}

// landed is where a commit put its group: each batch's first offset (-1
// where the commit decided none), the snapshot, and every partition's end
// offset after it (nil when not known), which the group's answers wait
// for this gateway to serve (Config.AwaitServed).
type landed struct {
	bases      []int64
	snapshotID int64
	ends       []int64
}

// afterCommitter is a target with work to do once a commit's batches are
// answered (removing the files of the snapshots the commit expired).
type afterCommitter interface {
	afterCommit(ctx context.Context)
}

// SummaryCommitID names each produce commit in its snapshot summary, so
// that a commit whose answer was lost (a catalog timeout) can be found.
const SummaryCommitID = "lakegw.produce-commit"

// maybeCommitted is a commit failure after which the catalog may have
// taken the commit.
type maybeCommitted struct{ err error }

func (e *maybeCommitted) Error() string { return "outcome unknown: " + e.err.Error() }
func (e *maybeCommitted) Unwrap() error { return e.err }

// resolveAttempts bounds the looks for a commit whose answer was lost.
const resolveAttempts = 5

// maxCommitAttempts bounds the retries of a commit that keeps losing to
// other committers (maintenance, another gateway).
const maxCommitAttempts = 20

// run commits groups until ctx ends; the batches still queued then fail
// with ErrClosed.
func (w *writer) run(ctx context.Context) {
	defer close(w.done)
	w.answers = make(chan answers, answerQueue)
	answered := make(chan struct{})
	go func() {
		defer close(answered)
		w.answerLoop(ctx, w.answers)
	}()
	defer func() {
		close(w.answers)
		<-answered
	}()
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
		w.mu.Lock()
		urgent := w.urgent
		w.mu.Unlock()
		if wait := w.interval - time.Since(last); wait > 0 && !urgent {
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
					full = w.queued >= w.svc.cfg.MaxCommitBytes || w.urgent
					w.mu.Unlock()
					if full {
						timer.Stop()
					}
				}
			}
		}
		w.mu.Lock()
		group := w.queue
		w.queue, w.queued, w.urgent = nil, 0, false
		w.mu.Unlock()
		if len(group) == 0 {
			continue
		}
		last = time.Now()
		w.commitMu.Lock()
		w.commitGroup(ctx, group)
		w.commitMu.Unlock()
	}
}

// commitGroup commits group and wakes its requests.
func (w *writer) commitGroup(ctx context.Context, group []*ticket) {
	start := time.Now()
	id := newCommitID()
	l, err := w.target.commit(ctx, group, func(bases []int64) (iceberg.Properties, error) {
		props, err := w.producersSummary(group, bases)
		if err == nil {
			props[SummaryCommitID] = id
			w.mu.Lock()
			markers := w.markersFor(group)
			w.mu.Unlock()
			if markers != "" {
				props[SummaryTransactions] = markers
			}
		}
		return props, err
	})
	unsure := false
	var maybe *maybeCommitted
	if errors.As(err, &maybe) {
		// Answered nothing: the commit may be in the table. Failing its
		// batches then would have their retries written twice.
		l, unsure, err = w.resolve(ctx, id, group, err)
	}
	w.mu.Lock()
	if err != nil {
		// The producers' state is read again from the table before the
		// next batch is taken, when no one knows whether it holds this
		// group.
		w.unsure = w.unsure || unsure
		// Every batch accepted since depends on this group's sequences:
		// all fail, and every producer retries from its committed state.
		rest := w.queue
		w.queue, w.queued = nil, 0
		w.seq.failed()
		w.mu.Unlock()
		w.log.Warn().Err(err).Int("batches", len(group)+len(rest)).Msg("commit of produced records failed; their producers retry")
		w.answer(ctx, answers{group: append(group, rest...), err: fmt.Errorf("%w: %w", ErrCommitFailed, err)})
		return
	}
	for i, t := range group {
		t.res.BaseOffset = l.bases[i]
		if t.txn != "" {
			w.carried[t.txn] = struct{}{}
		}
	}
	w.seq.committed(group)
	w.mu.Unlock()
	w.log.Debug().Int64("snapshot_id", l.snapshotID).Int("batches", len(group)).Dur("took", time.Since(start)).Msg("committed produced records")
	if w.svc.cfg.OnCommit != nil {
		w.svc.cfg.OnCommit(w.topic)
	}
	w.answer(ctx, answers{group: group, ends: l.ends})
	if a, ok := w.target.(afterCommitter); ok {
		a.afterCommit(ctx)
	}
}

// resolve finds out whether the commit named id is in the table after its
// answer was lost: found, the group succeeded; known absent, cause stands;
// unknown after resolveAttempts looks, cause stands and unsure is true.
func (w *writer) resolve(ctx context.Context, id string, group []*ticket, cause error) (landed, bool, error) {
	wait := 100 * time.Millisecond
	for attempt := 1; attempt <= resolveAttempts; attempt++ {
		l, found, err := w.target.find(ctx, id, group)
		switch {
		case err == nil && found:
			w.log.Info().Err(cause).Int64("snapshot_id", l.snapshotID).Msg("a commit that answered with an error is in the table: its batches succeeded")
			return l, false, nil
		case err == nil:
			return landed{}, false, cause
		}
		w.log.Warn().Err(err).Int("attempt", attempt).Msg("cannot tell whether a commit landed; looking again")
		select {
		case <-ctx.Done():
			return landed{}, true, cause
		case <-time.After(wait):
		}
		wait *= 2
	}
	return landed{}, true, cause
}

// rereadState reads the producers' state from the table again after a commit
// whose outcome is unknown: whatever the table holds is what retries are
// checked against. Called by Submit without w.mu.
func (w *writer) rereadState(ctx context.Context) error {
	tbl, err := w.target.load(ctx)
	if err != nil {
		return fmt.Errorf("%w: reading the producers' state after a commit of unknown outcome: %w", ErrCommitFailed, err)
	}
	seq, err := restore(tbl)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrCommitFailed, err)
	}
	carried := newestWriterMarkers(tbl)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.unsure && len(w.queue) == 0 {
		w.seq, w.carried, w.unsure = seq, carried, false
	}
	return nil
}

// newCommitID names one commit (SummaryCommitID).
func newCommitID() string {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		// crypto/rand does not fail on Linux; a clock value still names
		// a commit well enough to be found again.
		return fmt.Sprintf("t%x", time.Now().UnixNano())
	}
	return hex.EncodeToString(b[:])
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
	ps := w.seq.after(group, bases, time.Now())
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

// findCommit is the snapshot of tbl's main history whose summary names
// commit id, or nil.
func findCommit(tbl *table.Table, id string) *table.Snapshot {
	meta := tbl.Metadata()
	seen := 0
	for snap := tbl.CurrentSnapshot(); snap != nil && seen <= len(meta.Snapshots()); seen++ {
		if snap.Summary != nil && snap.Summary.Properties[SummaryCommitID] == id {
			return snap
		}
		if snap.ParentSnapshotID == nil {
			return nil
		}
		snap = meta.SnapshotByID(*snap.ParentSnapshotID)
	}
	return nil
}
