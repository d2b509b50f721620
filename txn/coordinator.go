package txn

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sync/semaphore"
)

// Tables commits staged records to the tables of produced topics
// (protocol/ implements it through produce/).
type Tables interface {
	// CheckPartition says whether topic's partition takes records (nil),
	// or why not, before a transaction adds it.
	CheckPartition(ctx context.Context, topic string, partition int32) error
	// Commit makes batches, all of topic and in staging order, visible
	// in one Iceberg commit whose snapshot summary names marker, and
	// returns once it has landed (or failed: then nothing of it is
	// visible, or the commit is found by Committed).
	Commit(ctx context.Context, topic, marker string, batches []StagedBatch) error
	// Committed says whether topic's table holds the commit naming marker.
	Committed(ctx context.Context, topic, marker string) (bool, error)
}

// Offsets commits consumer group offsets (the group coordinator).
type Offsets interface {
	// CommitOffsets commits offs, durably, as OffsetCommit would.
	CommitOffsets(ctx context.Context, offs []StagedOffset) error
}

// Options bound and time the coordinator.
type Options struct {
	// MaxTimeout is the longest transaction.timeout.ms a producer may ask
	// for (Kafka's transaction.max.timeout.ms; default an hour).
	MaxTimeout time.Duration
	// MaxTransactionBytes bounds what one transaction stages (default
	// 256 MiB): its commit holds all of it in memory at once.
	MaxTransactionBytes int64
	// MaxTransactionalIDs bounds the ids kept (default 100,000); an id
	// idle past IDExpiration is forgotten first.
	MaxTransactionalIDs int
	// IDExpiration forgets a transactional id with no transaction open
	// and no use for this long (Kafka's transactional.id.expiration.ms;
	// default 7 days).
	IDExpiration time.Duration
	// RetryInterval is how often the coordinator looks for timed-out
	// transactions and retries completions that failed (default 1 s).
	RetryInterval time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	Log zerolog.Logger
}

// Defaults for Options.
const (
	// DefaultMaxTimeout is Flink's KafkaSink default transaction timeout,
	// so that an exactly-once Flink job runs against lakegw as configured
	// out of the box (Kafka's own default, 15 minutes, refuses it).
	DefaultMaxTimeout          = time.Hour
	DefaultMaxTransactionBytes = 256 << 20
	DefaultMaxTransactionalIDs = 100_000
	DefaultIDExpiration        = 7 * 24 * time.Hour
	DefaultRetryInterval       = time.Second
)

// Coordinator coordinates every transactional id of this gateway. Its
// goroutine (timeouts, completion retries, id expiry) runs from Open until
// Close.
type Coordinator struct {
	store   Store
	tables  Tables
	offsets Offsets
	opts    Options
	log     zerolog.Logger

	// ctx is the coordinator's: completions run under it, not under the
	// request that asked for them, so that a client giving up cannot
	// leave a table's commit half known.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu  sync.Mutex
	ids map[string]*entry // bounded by MaxTransactionalIDs
	// unstable counts, per group partition, the open transactions that
	// staged an offset for it (OffsetFetch's RequireStable), and
	// unstableGroups per group.
	unstable       map[offsetKey]int
	unstableGroups map[string]int
	// pending holds the markers of the transactions decided to commit
	// and not complete (Pending).
	pending map[string]bool
	// decoding bounds what completions hold decoded at once: each claims
	// its transaction's StagedBytes (at most MaxTransactionBytes).
	decoding *semaphore.Weighted
}

type offsetKey struct {
	group, topic string
	partition    int32
}

// entry is one transactional id. mu serialises its requests; it is held
// across store writes and across a completion's table commits.
type entry struct {
	mu  sync.Mutex
	rec Record
	// view is rec as last set, for readers that must not wait for the
	// requests holding mu (a completion's table commits): Describe,
	// List, Producers.
	view atomic.Pointer[Record]
	// recent are the last batches staged per partition in this process,
	// so that a retry is answered as the first attempt was.
	recent map[TopicPartition][]seqRange
	// offsets are the group partitions this transaction staged offsets
	// for (mirrored in Coordinator.unstable).
	offsets map[offsetKey]bool
	// removed is set once the entry left the map (forgotten, or its
	// first save failed): a request that waited on it starts again.
	removed bool
	// retryAt and retryDelay pace the sweep's retries of a completion
	// that keeps failing (a catalog down): it backs off to maxRetryDelay.
	retryAt    time.Time
	retryDelay time.Duration
}

// maxRetryDelay bounds the back-off of a completion that keeps failing.
const maxRetryDelay = time.Minute

func newEntry(r Record) *entry {
	e := &entry{recent: map[TopicPartition][]seqRange{}, offsets: map[offsetKey]bool{}}
	e.set(r)
	return e
}

// set makes r the entry's record; e.mu held (or e not yet shared).
func (e *entry) set(r Record) {
	e.rec = r
	e.view.Store(&r)
}

// snapshot is the entry's record as last set, without waiting for e.mu.
func (e *entry) snapshot() Record { return *e.view.Load() }

type seqRange struct{ first, last int32 }

// recentKept matches the five requests an idempotent producer keeps in
// flight.
const recentKept = 5

// New returns a coordinator over store; Open loads it.
func New(store Store, tables Tables, offsets Offsets, opts Options) *Coordinator {
	if opts.MaxTimeout <= 0 {
		opts.MaxTimeout = DefaultMaxTimeout
	}
	if opts.MaxTransactionBytes <= 0 {
		opts.MaxTransactionBytes = DefaultMaxTransactionBytes
	}
	if opts.MaxTransactionalIDs <= 0 {
		opts.MaxTransactionalIDs = DefaultMaxTransactionalIDs
	}
	if opts.IDExpiration <= 0 {
		opts.IDExpiration = DefaultIDExpiration
	}
	if opts.RetryInterval <= 0 {
		opts.RetryInterval = DefaultRetryInterval
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Coordinator{store: store, tables: tables, offsets: offsets, opts: opts, log: opts.Log,
		ctx: ctx, cancel: cancel, ids: map[string]*entry{}, unstable: map[offsetKey]int{}, unstableGroups: map[string]int{},
		pending: map[string]bool{}, decoding: semaphore.NewWeighted(opts.MaxTransactionBytes)}
}

// Open loads every transactional id from the store and starts the
// coordinator's goroutine, which completes at once any transaction a
// previous run decided to commit and did not finish.
func (c *Coordinator) Open(ctx context.Context) error {
	recs, err := c.store.LoadTransactions(ctx)
	if err != nil {
		return fmt.Errorf("load transactions: %w", err)
	}
	offs := map[string][]StagedOffset{}
	for _, r := range recs {
		if r.State == StateOngoing || r.State == StatePrepareCommit {
			staged, err := c.store.StagedOffsets(ctx, r.ID)
			if err != nil {
				return fmt.Errorf("load transactions: %w", err)
			}
			offs[r.ID] = staged
		}
	}
	c.mu.Lock()
	for _, r := range recs {
		e := newEntry(r)
		c.ids[r.ID] = e
		for _, o := range offs[r.ID] {
			c.markUnstableLocked(e, offsetKey{o.Group, o.Topic, o.Partition})
		}
		if r.State == StatePrepareCommit {
			c.pending[Marker(r)] = true
		}
	}
	c.mu.Unlock()
	open := 0
	for _, r := range recs {
		if r.State == StateOngoing || r.State == StatePrepareCommit {
			open++
		}
	}
	c.log.Info().Int("transactional_ids", len(recs)).Int("open", open).Msg("transaction coordinator loaded")
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		c.run()
	}()
	return nil
}

// Close stops the coordinator's goroutine and any completion under way
// (a restart resumes it) and waits for the goroutine.
func (c *Coordinator) Close() {
	c.cancel()
	c.wg.Wait()
}

// run applies timeouts, retries completions and forgets idle ids every
// RetryInterval until Close.
func (c *Coordinator) run() {
	t := time.NewTicker(c.opts.RetryInterval)
	defer t.Stop()
	for {
		c.sweep()
		select {
		case <-c.ctx.Done():
			return
		case <-t.C:
		}
	}
}

// sweep is one pass of run: it skips an id whose requests hold it.
func (c *Coordinator) sweep() {
	now := c.opts.Now()
	es := c.entries()
	for _, e := range es {
		if c.ctx.Err() != nil {
			return
		}
		if !e.mu.TryLock() {
			continue
		}
		if e.removed {
			e.mu.Unlock()
			continue
		}
		var err error
		switch r := e.rec; {
		case r.State == StatePrepareCommit && now.Before(e.retryAt):
		case r.State == StatePrepareCommit:
			if err = c.completeCommitLocked(e); err != nil {
				e.retryDelay = min(max(2*e.retryDelay, c.opts.RetryInterval), maxRetryDelay)
				e.retryAt = now.Add(e.retryDelay)
			}
		case r.State == StateOngoing && now.UnixMilli() > r.StartMs+int64(r.TimeoutMs):
			c.log.Info().Str("transactional_id", r.ID).Int64("producer_id", r.ProducerID).Int16("epoch", r.Epoch).
				Int32("timeout_ms", r.TimeoutMs).Msg("transaction timed out: aborting it and fencing its producer")
			err = c.abortLocked(c.ctx, e, true)
		case r.State != StateOngoing && now.Sub(time.UnixMilli(r.UpdateMs)) > c.opts.IDExpiration:
			err = c.forgetLocked(c.ctx, e)
		}
		id, stuck := e.rec.ID, e.retryDelay >= maxRetryDelay
		e.mu.Unlock()
		switch {
		case err == nil || c.ctx.Err() != nil:
		case stuck:
			// Retried for minutes: an operator must look (the table's
			// schema changed under the transaction, the catalog is down).
			c.log.Error().Err(err).Str("transactional_id", id).Dur("retry_every", maxRetryDelay).
				Msg("a transaction decided to commit still cannot be; its producer is refused until it is")
		default:
			c.log.Warn().Err(err).Str("transactional_id", id).Msg("transaction coordinator: retrying later")
		}
	}
}

// entries lists every id's entry, for a pass over them without c.mu.
func (c *Coordinator) entries() []*entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	es := make([]*entry, 0, len(c.ids))
	for _, e := range c.ids {
		es = append(es, e)
	}
	return es
}

// get returns the id's entry, or nil.
func (c *Coordinator) get(id string) *entry {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ids[id]
}

// forgetLocked removes an idle id (Kafka's transactional id expiry).
func (c *Coordinator) forgetLocked(ctx context.Context, e *entry) error {
	if err := c.store.DeleteTransaction(ctx, e.rec.ID); err != nil {
		return fmt.Errorf("%w: forget transactional id %q: %w", ErrStore, e.rec.ID, err)
	}
	e.removed = true
	c.mu.Lock()
	if c.ids[e.rec.ID] == e {
		delete(c.ids, e.rec.ID)
	}
	c.mu.Unlock()
	c.log.Debug().Str("transactional_id", e.rec.ID).Msg("forgot an idle transactional id")
	return nil
}

// markUnstableLocked records that e staged an offset for k; c.mu held.
func (c *Coordinator) markUnstableLocked(e *entry, k offsetKey) {
	if !e.offsets[k] {
		e.offsets[k] = true
		c.unstable[k]++
		c.unstableGroups[k.group]++
	}
}

// clearUnstable forgets e's staged offsets (its transaction ended).
func (c *Coordinator) clearUnstable(e *entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k := range e.offsets {
		if c.unstable[k]--; c.unstable[k] <= 0 {
			delete(c.unstable, k)
		}
		if c.unstableGroups[k.group]--; c.unstableGroups[k.group] <= 0 {
			delete(c.unstableGroups, k.group)
		}
	}
	clear(e.offsets)
}

// UnstableGroup says whether an open transaction staged an offset for any
// partition of the group (an OffsetFetch of all its offsets).
func (c *Coordinator) UnstableGroup(group string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.unstableGroups[group] > 0
}

// Pending says whether the transaction marker names (Marker) is decided
// to commit and not complete: produce/ carries the markers of such
// transactions' landed commits (produce.Config.TransactionPending).
func (c *Coordinator) Pending(marker string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pending[marker]
}

// setPending records that the transaction marker names is decided to
// commit (on) or ended (off).
func (c *Coordinator) setPending(marker string, on bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if on {
		c.pending[marker] = true
	} else {
		delete(c.pending, marker)
	}
}

// UnstableOffset says whether an open transaction staged an offset for the
// group's partition: OffsetFetch with RequireStable answers
// UNSTABLE_OFFSET_COMMIT until it ends (KIP-447).
func (c *Coordinator) UnstableOffset(group, topic string, partition int32) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.unstable[offsetKey{group, topic, partition}] > 0
}

// topicsOf lists the topics of parts, sorted, once each.
func topicsOf(parts []TopicPartition) []string {
	var out []string
	seen := map[string]bool{}
	for _, p := range parts {
		if !seen[p.Topic] {
			seen[p.Topic] = true
			out = append(out, p.Topic)
		}
	}
	sort.Strings(out)
	return out
}
