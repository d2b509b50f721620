package produce

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/rs/zerolog"
	"golang.org/x/sync/semaphore"

	"github.com/lakegw/lakegw/changelog"
	"github.com/lakegw/lakegw/internal/kafkaseq"
	"github.com/lakegw/lakegw/lake"
	"github.com/lakegw/lakegw/lsm"
	"github.com/lakegw/lakegw/maintain"
)

// Config configures the produce path.
type Config struct {
	// CommitInterval is the least time between two commits of a table:
	// what a produced record waits at most for its group (default 50ms).
	CommitInterval time.Duration
	// MaxCommitBytes commits a group at once when it holds this much
	// (default 32 MiB).
	MaxCommitBytes int64
	// MaxPendingBytes bounds the produced bytes held in memory across all
	// tables until their commit; a request waits for room (Kafka's
	// throttling) rather than growing it (default 256 MiB).
	MaxPendingBytes int64
	// DefaultFormat is the record format of a table topic whose table
	// sets none (lakegw.format): the gateway's --format, which its
	// consumers read too.
	DefaultFormat string
	// OnCommit is called with the topic after each commit, to wake its
	// consumers on this gateway.
	OnCommit func(topic string)
	// AwaitServed, when set, returns once this gateway serves topic up
	// to ends (every partition's end offset after a commit), or with
	// ctx's error: a commit's requests are answered after it (see
	// answers.go).
	AwaitServed func(ctx context.Context, topic string, ends []int64) error
	// TransactionPending says whether the transaction a marker names is
	// decided and not yet complete (txn.Coordinator.Pending): the writer
	// carries the marker of such a transaction's landed commit in each
	// of its later commits (SummaryTransactions), so that the newest of
	// them says whether it landed however many snapshots expire
	// meanwhile. Nil: none is.
	TransactionPending func(marker string) bool
	// ExpiredFilesGrace is how long the files of the snapshots a raw
	// topic's commits expire stay before the writer removes them, so that
	// a scan planned on a recent snapshot still finds them (default 10
	// min; negative: removed at once).
	ExpiredFilesGrace time.Duration
	Log               zerolog.Logger
}

// Defaults for Config.
const (
	// DefaultCommitInterval: at most twenty commits a second per table.
	// A producer's acknowledgements wait for the commit, so its rate is
	// what it keeps in flight (a default idempotent franz-go producer:
	// 50,000 records, 5 requests) over the commit cycle: in the produce
	// passes of e2e/bench (1M records, medians of three, same binary)
	// 50 ms took 368,866 records/s where 100 ms took 287,859, at 1.45x
	// the data files per MB (0.99 vs 0.68; raw compaction merges them). A commit's cost does not grow
	// with the table's history (maintain.HistoryCap), so the shorter
	// interval costs CPU, not a slower table later.
	DefaultCommitInterval  = 50 * time.Millisecond
	DefaultMaxCommitBytes  = 32 << 20
	DefaultMaxPendingBytes = 256 << 20
	// DefaultExpiredFilesGrace is the maintenance pass's grace too.
	DefaultExpiredFilesGrace = maintain.DefaultRemovalGrace
)

// Service takes produced records for the tables of one catalog. Its
// writers run until the context given to New ends; Wait waits for them.
type Service struct {
	cat     catalog.Catalog
	cfg     Config
	ctx     context.Context
	pending *semaphore.Weighted

	// epochs are the newest epoch of each producer id seen (epochs.go).
	epochs *epochs
	// manifests caches what raw topics' commits read of their tables'
	// manifests to remove the files of the snapshots they expire.
	manifests *maintain.ManifestCache

	mu      sync.Mutex
	writers map[string]*writer // one per raw topic produced to: bounded by the tables
	wg      sync.WaitGroup
}

// New returns a Service whose writers live as long as ctx.
func New(ctx context.Context, cat catalog.Catalog, cfg Config) *Service {
	if cfg.CommitInterval <= 0 {
		cfg.CommitInterval = DefaultCommitInterval
	}
	if cfg.MaxCommitBytes <= 0 {
		cfg.MaxCommitBytes = DefaultMaxCommitBytes
	}
	if cfg.MaxPendingBytes <= 0 {
		cfg.MaxPendingBytes = DefaultMaxPendingBytes
	}
	if cfg.ExpiredFilesGrace == 0 {
		cfg.ExpiredFilesGrace = DefaultExpiredFilesGrace
	}
	return &Service{cat: cat, cfg: cfg, ctx: ctx, pending: semaphore.NewWeighted(cfg.MaxPendingBytes), writers: map[string]*writer{},
		epochs: newEpochs(), manifests: maintain.NewManifestCache(manifestCacheBytes)}
}

// Wait returns once every writer has stopped (after New's context ended).
func (s *Service) Wait() { s.wg.Wait() }

// InitProducerID hands out a new idempotent producer id, epoch 0. Ids are
// random 63-bit numbers: unique across restarts and gateways without any
// shared counter.
func (s *Service) InitProducerID() (int64, int16, error) {
	pid, err := kafkaseq.NewProducerID()
	if err != nil {
		return 0, 0, err
	}
	s.epochs.saw(pid, 0)
	return pid, 0, nil
}

// BumpProducerEpoch answers InitProducerId from an idempotent producer
// that gives its id and epoch (KIP-360: it lost its sequence state): the
// same id under the next epoch, a new id when the epochs ran out, or
// ErrInvalidProducerEpoch when a newer epoch of the id wrote or was given
// (the asker was fenced).
func (s *Service) BumpProducerEpoch(pid int64, epoch int16) (int64, int16, error) {
	next, ok, err := s.epochs.bump(pid, epoch)
	if err != nil {
		return -1, -1, err
	}
	if !ok {
		return s.InitProducerID()
	}
	return pid, next, nil
}

// Produce writes batches to topic and returns each one's result once the
// commit holding it has succeeded (or failed), or ctx ended (the batch may
// still be committed: an idempotent producer's retry is recognised).
// throttled is how long the request waited for memory.
func (s *Service) Produce(ctx context.Context, topic string, batches []Batch) (results []Result, throttled time.Duration) {
	return s.Submit(ctx, topic, batches).Wait(ctx)
}

// Submitted is a produce request whose batches were checked and queued
// for their commit (Submit); Wait waits for it.
type Submitted struct {
	results   []Result
	tickets   []*ticket
	throttled time.Duration
}

// Submit checks every batch (partition, producer sequence) and queues the
// accepted ones for their table's next commit, without waiting for it.
// Batches of one producer must be submitted in the order it sent them:
// protocol/ submits a connection's produce requests in request order.
func (s *Service) Submit(ctx context.Context, topic string, batches []Batch) *Submitted {
	sub := &Submitted{results: make([]Result, len(batches)), tickets: make([]*ticket, len(batches))}
	w, err := s.writer(ctx, topic)
	if err != nil {
		for i := range sub.results {
			sub.results[i] = Result{BaseOffset: -1, Err: err}
		}
		return sub
	}
	for i := range batches {
		b := &batches[i]
		if err := w.checkPartition(b.Partition); err != nil {
			sub.results[i] = Result{BaseOffset: -1, Err: err}
			continue
		}
		if len(b.Records) == 0 {
			sub.results[i] = Result{BaseOffset: -1, Err: fmt.Errorf("%w: a batch without records", ErrInvalidRecord)}
			continue
		}
		t := newTicket(b)
		t.size = min(t.size, s.cfg.MaxPendingBytes)
		if err := w.target.prepare(t); err != nil {
			sub.results[i] = Result{BaseOffset: -1, Err: err}
			continue
		}
		start := time.Now()
		if err := s.pending.Acquire(ctx, t.size); err != nil {
			w.mu.Lock()
			w.seq.hole(b) // a later batch of its producer must not pass it
			w.mu.Unlock()
			sub.results[i] = Result{BaseOffset: -1, Err: err}
			continue
		}
		sub.throttled += time.Since(start)
		w.mu.Lock()
		if w.unsure {
			w.mu.Unlock()
			if err := w.rereadState(ctx); err != nil {
				s.release(t.size)
				sub.results[i] = Result{BaseOffset: -1, Err: err}
				continue
			}
			w.mu.Lock()
		}
		if w.closed {
			// Stopped under this request (a deleted topic, a restart):
			// the client retries and meets the topic as it is now.
			w.mu.Unlock()
			s.release(t.size)
			sub.results[i] = Result{BaseOffset: -1, Err: ErrClosed}
			continue
		}
		if b.ProducerID >= 0 {
			s.epochs.saw(b.ProducerID, b.ProducerEpoch)
		}
		dup, err := w.seq.accept(b, t, time.Now())
		var dupOffset int64
		var dupTicket *ticket
		if dup != nil {
			// Read under the lock: a commit or a failure changes it.
			dupOffset, dupTicket = dup.offset, dup.pending
		}
		if err != nil || dup != nil {
			w.mu.Unlock()
			s.release(t.size)
			switch {
			case err != nil:
				sub.results[i] = Result{BaseOffset: -1, Err: err}
			case dupTicket == nil:
				sub.results[i] = Result{BaseOffset: dupOffset}
			default:
				sub.tickets[i] = dupTicket // a retry of a batch still being committed
			}
			continue
		}
		w.queue = append(w.queue, t)
		w.queued += t.size
		w.mu.Unlock()
		sub.tickets[i] = t
		select {
		case w.wake <- struct{}{}:
		default:
		}
	}
	return sub
}

// Wait returns each batch's result once the commit holding it has
// succeeded or failed, or ctx ended (then the batch may still be
// committed), and how long the request waited for memory.
func (sub *Submitted) Wait(ctx context.Context) ([]Result, time.Duration) {
	for i, t := range sub.tickets {
		if t == nil {
			continue
		}
		select {
		case <-t.done:
			sub.results[i] = t.res
		case <-ctx.Done():
			sub.results[i] = Result{BaseOffset: -1, Err: ctx.Err()}
		}
	}
	return sub.results, sub.throttled
}

// CheckTopic says whether topic takes records (nil), and if not why
// (ErrUnknownTopic, ErrReadOnly), before its records are decoded.
func (s *Service) CheckTopic(ctx context.Context, topic string) error {
	_, err := s.writer(ctx, topic)
	return err
}

func (s *Service) release(n int64) { s.pending.Release(n) }

// writer returns the writer of topic, starting it (and restoring its
// producers' state from the table) on first use.
func (s *Service) writer(ctx context.Context, topic string) (*writer, error) {
	ident, err := lake.TopicIdent(topic)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnknownTopic, err)
	}
	// One writer per table whichever of its names a client uses ("t" or
	// "kafka.t"): two would split its producers' sequences and race.
	topic = lake.TopicName(ident)
	s.mu.Lock()
	w, ok := s.writers[topic]
	s.mu.Unlock()
	if ok {
		return w, nil
	}
	if s.ctx.Err() != nil {
		return nil, ErrClosed
	}
	tbl, err := s.cat.LoadTable(ctx, ident)
	if errors.Is(err, catalog.ErrNoSuchTable) {
		return nil, fmt.Errorf("%w: %s", ErrUnknownTopic, topic)
	}
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", topic, err)
	}
	tgt, partitions, err := s.targetOf(ctx, topic, ident, tbl)
	if err != nil {
		return nil, err
	}
	seq, err := restore(tbl)
	if err != nil {
		return nil, fmt.Errorf("producer state of %s: %w", topic, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if w, ok := s.writers[topic]; ok {
		return w, nil
	}
	interval, err := commitIntervalOf(tbl.Properties(), s.cfg.CommitInterval)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", topic, err)
	}
	wctx, stop := context.WithCancel(s.ctx)
	w = &writer{svc: s, topic: topic, partitions: partitions, target: tgt, seq: seq, carried: newestWriterMarkers(tbl), stop: stop, interval: interval,
		log: s.cfg.Log.With().Str("topic", topic).Logger(), wake: make(chan struct{}, 1), done: make(chan struct{})}
	s.writers[topic] = w
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		w.run(wctx)
	}()
	return w, nil
}

// HoldCommits runs fn while this gateway's writer of topic (if any) holds
// its commits: a maintenance step whose staging takes longer than the
// writer's commit interval (a raw compaction's swap rewrites manifests)
// would otherwise lose every race to it. The writer goes on taking
// batches meanwhile; fn should take a fraction of a second.
func (s *Service) HoldCommits(topic string, fn func() error) error {
	s.mu.Lock()
	w := s.writers[CanonicalTopic(topic)]
	s.mu.Unlock()
	if w == nil {
		return fn()
	}
	w.commitMu.Lock()
	defer w.commitMu.Unlock()
	return fn()
}

// expiredFileRemovals holds a raw topic writer's expired files for
// Config.ExpiredFilesGrace (nil: removed at once).
func (s *Service) expiredFileRemovals() *maintain.DeferredRemovals {
	if s.cfg.ExpiredFilesGrace < 0 {
		return nil
	}
	return &maintain.DeferredRemovals{Grace: s.cfg.ExpiredFilesGrace}
}

// CanonicalTopic is the name a table's writer is known by (lake.TopicName
// of the table topic stands for: "t" and "kafka.t" are one table); topic
// itself when it names no table. A transaction keeps its partitions by it.
func CanonicalTopic(topic string) string {
	ident, err := lake.TopicIdent(topic)
	if err != nil {
		return topic
	}
	return lake.TopicName(ident)
}

// ReleaseUnless stops, in the background, the writers of the topics keep
// refuses: gateways sharing the work pass the tables this one no longer
// leads. Their queued batches fail with ErrClosed (the client retries at
// the new leader), and should this gateway lead a table again, its writer
// starts afresh from the table, with the producers' state its new commits
// carry.
func (s *Service) ReleaseUnless(keep func(topic string) bool) {
	s.mu.Lock()
	var drop []string
	for topic := range s.writers {
		if !keep(topic) {
			drop = append(drop, topic)
		}
	}
	s.mu.Unlock()
	for _, topic := range drop {
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.stopWriter(topic)
			s.cfg.Log.Info().Str("topic", topic).Msg("released the writer of a table another gateway leads now")
		}()
	}
}

// stopWriter stops the writer of topic (its queued batches fail with
// ErrClosed) and waits for it; the next produce to the topic loads its
// table afresh.
func (s *Service) stopWriter(topic string) {
	topic = CanonicalTopic(topic)
	s.mu.Lock()
	w := s.writers[topic]
	delete(s.writers, topic)
	s.mu.Unlock()
	if w != nil {
		w.mu.Lock()
		w.closed = true // no Submit queues to it from now on
		w.mu.Unlock()
		w.stop()
		<-w.done
	}
}

// targetOf is what a writer of tbl commits to: a raw topic's table, or a
// lakegw primary-key table (a table topic); any other table is read-only.
func (s *Service) targetOf(ctx context.Context, topic string, ident table.Identifier, tbl *table.Table) (target, int32, error) {
	props := tbl.Properties()
	switch {
	case changelog.IsRawTable(props):
		partitions, err := rawPartitions(tbl)
		if err != nil {
			return nil, 0, err
		}
		return &appendTarget{rows: rawRows{}, cat: s.cat, topic: topic, ident: ident, partitions: partitions, tbl: tbl,
			log: s.cfg.Log.With().Str("topic", topic).Logger(),
			history: &maintain.HistoryCap{Keep: RawSnapshotsKept, MaxAge: RawSnapshotRetention, Manifests: s.manifests,
				Removals: s.expiredFileRemovals()}}, partitions, nil
	case changelog.IsAppendTable(props):
		rows, err := newSchemaRows(cmp.Or(props[changelog.PropFormat], "json"), tbl.Schema())
		if err != nil {
			return nil, 0, err
		}
		rows.evolve, rows.cat, rows.ident = props[ConfigAutoEvolve] == "true", s.cat, ident
		return &appendTarget{rows: rows, cat: s.cat, topic: topic, ident: ident, partitions: 1, tbl: tbl,
			log: s.cfg.Log.With().Str("topic", topic).Logger()}, 1, nil
	case changelog.IsLSMTable(props):
		lt, err := lsm.Open(ctx, s.cat, ident, lsm.Options{Log: s.cfg.Log.With().Str("topic", topic).Logger()})
		if err != nil {
			return nil, 0, fmt.Errorf("open %s: %w", topic, err)
		}
		checker, err := lt.NewWriter(ctx)
		if err != nil {
			return nil, 0, fmt.Errorf("open %s: %w", topic, err)
		}
		format := cmp.Or(props[changelog.PropFormat], s.cfg.DefaultFormat, "debezium-json")
		partitions, err := strconv.Atoi(props[changelog.PropPartitions])
		if err != nil || partitions < 1 {
			return nil, 0, fmt.Errorf("table topic %s: %s=%q is not a partition count", topic, changelog.PropPartitions, props[changelog.PropPartitions])
		}
		return &tableTarget{tbl: lt, format: format, checker: checker, evolve: props[ConfigAutoEvolve] == "true",
			cat: s.cat, ident: ident}, int32(partitions), nil
	}
	return nil, 0, fmt.Errorf("%w: %s serves the changes of an Iceberg table; write to the table instead", ErrReadOnly, topic)
}

// ConfigCommitInterval is a produced topic's least time between two
// commits in milliseconds (a CreateTopics config and table property),
// overriding the gateway's --commit-interval.
const ConfigCommitInterval = "lakegw.commit.interval.ms"

// commitIntervalOf is the table's commit interval, or def.
func commitIntervalOf(props map[string]string, def time.Duration) (time.Duration, error) {
	v, ok := props[ConfigCommitInterval]
	if !ok {
		return def, nil
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil || ms < 0 || ms > 60_000 {
		return 0, fmt.Errorf("%s=%q: want milliseconds from 0 to 60000", ConfigCommitInterval, v)
	}
	return time.Duration(ms) * time.Millisecond, nil
}
