package topics

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"github.com/rs/zerolog"

	"github.com/lakegw/lakegw/derive"
	"github.com/lakegw/lakegw/lake"
	"github.com/lakegw/lakegw/state"
)

// Registry is the set of served topics. It owns one watcher goroutine per
// table, and those stopped (a table gone or registered anew) until they
// return; Run stops and waits for all of them before it returns.
type Registry struct {
	cfg   Config
	cat   catalog.Catalog
	store *state.Store
	log   zerolog.Logger

	mu     sync.RWMutex
	topics map[string]*Topic
	// byID holds the served topics by Topic.ID (those that have one); of
	// two topics on one table (registered twice), the first by name.
	byID     map[uuid.UUID]*Topic
	watchers map[string]*watcher
	// retired holds stopped watchers, by topic name, until they have
	// returned: a new watcher of the same name waits for its predecessor.
	retired map[string]*watcher
	wg      sync.WaitGroup

	firstList chan struct{}
	listOnce  sync.Once
	// relist asks Run for a listing now (Relist).
	relist chan struct{}

	changes *changesCache
	// rowGroups keeps decoded row groups for every topic's derivations.
	rowGroups *derive.RowGroupCache

	// pointerCat is the catalog whose metadata pointers the watchers
	// poll (tests point it past a wrapper); pointers is open while Run
	// runs, nil when the catalog offers none.
	pointerCat catalog.Catalog
	pointers   *lake.MetadataPointers
}

// New returns a registry serving the tables of cat and those registered in
// store. cat may be nil (registered tables only).
func New(cfg Config, cat catalog.Catalog, store *state.Store, log zerolog.Logger) *Registry {
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = 200 * time.Millisecond
	}
	if cfg.ListInterval <= 0 {
		cfg.ListInterval = time.Second
	}
	if cfg.ChangesCacheBytes <= 0 {
		cfg.ChangesCacheBytes = 128 << 20
	}
	if cfg.RowGroupCacheBytes == 0 {
		cfg.RowGroupCacheBytes = DefaultRowGroupCacheBytes
	}
	if cfg.IndexDeriveMaxRecords <= 0 {
		cfg.IndexDeriveMaxRecords = DefaultIndexDeriveMaxRecords
	}
	if cfg.StreamChunkRecords == 0 {
		cfg.StreamChunkRecords = DefaultStreamChunkRecords
	}
	if cfg.Defaults.Format == "" {
		cfg.Defaults = DefaultTopicConfig()
	}

	return &Registry{
		cfg: cfg, cat: cat, store: store, log: log,
		topics:     map[string]*Topic{},
		byID:       map[uuid.UUID]*Topic{},
		watchers:   map[string]*watcher{},
		retired:    map[string]*watcher{},
		firstList:  make(chan struct{}),
		relist:     make(chan struct{}, 1),
		changes:    newChangesCache(cfg.ChangesCacheBytes, cfg.ChangesCacheIdle),
		rowGroups:  derive.NewRowGroupCache(cfg.RowGroupCacheBytes),
		pointerCat: cat,
	}
}

// Topic returns a served topic by name.
func (r *Registry) Topic(name string) (*Topic, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	t, ok := r.topics[name]
	return t, ok
}

// TopicByID returns a served topic by its ID (its table's UUID).
func (r *Registry) TopicByID(id uuid.UUID) (*Topic, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	t, ok := r.byID[id]
	return t, ok
}

// Topics returns every served topic, sorted by name.
func (r *Registry) Topics() []*Topic {
	r.mu.RLock()
	out := make([]*Topic, 0, len(r.topics))
	for _, t := range r.topics {
		out = append(out, t)
	}
	r.mu.RUnlock()
	slices.SortFunc(out, func(a, b *Topic) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
	return out
}

// Ready is closed once every table found by the first listing has been
// indexed (or has failed to): a gateway that answers Metadata before that
// would show an incomplete topic list.
func (r *Registry) Ready() <-chan struct{} { return r.firstList }

// Run lists the tables periodically and keeps a watcher on each until ctx
// is done; it returns after every watcher has stopped.
func (r *Registry) Run(ctx context.Context) error {
	if r.pointerCat != nil {
		p, err := lake.OpenMetadataPointers(ctx, r.pointerCat)
		if err != nil {
			// Polls still work, at the cost of a table load each.
			r.log.Warn().Err(err).Msg("cannot read metadata pointers from the catalog; loading tables on every poll")
		} else if p != nil {
			r.pointers = p
			defer func() {
				if err := p.Close(); err != nil {
					r.log.Warn().Err(err).Msg("closing the catalog database")
				}
			}()
		}
	}
	// Deferred last, run first: the watchers stop using pointers before
	// it closes.
	defer r.wg.Wait()
	tick := time.NewTicker(r.cfg.ListInterval)
	defer tick.Stop()
	for {
		r.refreshTables(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		case <-r.relist:
		}
	}
}

// Kick makes the watcher of topic name poll its table now rather than at
// its next interval (a commit through this gateway: its consumers wake
// with the commit); nothing when no such topic is watched.
func (r *Registry) Kick(name string) {
	r.mu.RLock()
	w := r.watchers[name]
	r.mu.RUnlock()
	if w == nil {
		return
	}
	select {
	case w.kick <- struct{}{}:
	default: // a poll is already asked for
	}
}

// Relist makes Run list the catalog now (a table created through this
// gateway is served at once, not at the next list interval).
func (r *Registry) Relist() {
	select {
	case r.relist <- struct{}{}:
	default:
	}
}

// tableSource says how to load one table.
type tableSource struct {
	ident    table.Identifier
	metaLoc  string // registered tables only
	remaps   []lake.Remap
	fromCat  bool
	regPaths string // identity of a registration, to notice re-registration
}

func (r *Registry) listSources(ctx context.Context) (map[string]tableSource, error) {
	out := map[string]tableSource{}
	if r.cat != nil {
		idents, err := lake.ListAllTables(ctx, r.cat)
		if err != nil {
			return nil, err
		}
		for _, id := range idents {
			out[lake.TopicName(id)] = tableSource{ident: id, fromCat: true}
		}
	}
	regs, err := r.store.RegisteredTables(ctx)
	if err != nil {
		return nil, err
	}
	for _, reg := range regs {
		id, err := lake.ParseIdent(reg.Ident)
		if err != nil {
			r.log.Error().Err(err).Str("table", reg.Ident).Msg("skipping registered table with a bad name")
			continue
		}
		src := tableSource{ident: id, metaLoc: reg.MetadataLocation, regPaths: fmt.Sprint(reg.MetadataLocation, reg.Remaps)}
		for _, s := range reg.Remaps {
			rm, err := lake.ParseRemap(s)
			if err != nil {
				return nil, fmt.Errorf("registered table %s: %w", reg.Ident, err)
			}
			src.remaps = append(src.remaps, rm)
		}
		// A registration wins over a catalog table of the same name: the
		// operator asked for it explicitly.
		out[reg.Ident] = src
	}
	return out, nil
}

func (r *Registry) refreshTables(ctx context.Context) {
	srcs, err := r.listSources(ctx)
	if err != nil {
		if ctx.Err() == nil {
			r.log.Error().Err(err).Msg("listing tables failed; keeping the current topics")
		}
		return
	}
	r.mu.Lock()
	for name, w := range r.retired {
		select {
		case <-w.done:
			delete(r.retired, name)
		default:
		}
	}
	var started []*watcher
	for name, src := range srcs {
		if w, ok := r.watchers[name]; ok {
			if w.src.regPaths == src.regPaths && !w.reopen.Load() {
				continue
			}
			r.retireLocked(name, w)
		}
		// The successor starts now but opens the index only once its
		// predecessor has returned (watcher.run): this lock is not held
		// while waiting, as the predecessor may need it to publish.
		w := newWatcher(ctx, r, name, src, r.retired[name])
		delete(r.retired, name)
		r.watchers[name] = w
		started = append(started, w)
	}
	for name, w := range r.watchers {
		if _, ok := srcs[name]; !ok {
			r.log.Info().Str("topic", name).Msg("table is gone; no longer serving it")
			r.retireLocked(name, w)
		}
	}
	r.mu.Unlock()
	for _, w := range started {
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			w.run()
		}()
	}
	r.listOnce.Do(func() {
		// Wait for the first sync of the tables found now, bounded, so a
		// slow table does not hold back the whole gateway.
		deadline := time.After(30 * time.Second)
		for _, w := range started {
			select {
			case <-w.firstSync:
			case <-deadline:
			case <-ctx.Done():
			}
		}
		close(r.firstList)
	})
}

// retireLocked stops serving a topic's watcher. It may still be writing
// the index: it stays in retired until it returns, so that a watcher
// started later under the same name waits for it.
func (r *Registry) retireLocked(name string, w *watcher) {
	w.stop()
	if t, ok := r.topics[name]; ok {
		// Fetches long-polling on the retired topic look it up again now:
		// they answer that it is unknown until its successor is served,
		// and the client refreshes its metadata.
		t.notify()
	}
	delete(r.watchers, name)
	if t, ok := r.topics[name]; ok && r.byID[t.ID] == t {
		delete(r.byID, t.ID)
		// Another topic of the same table takes its place.
		for _, other := range r.topics {
			if other != t && other.ID == t.ID && (r.byID[t.ID] == nil || other.Name < r.byID[t.ID].Name) {
				r.byID[t.ID] = other
			}
		}
	}
	delete(r.topics, name)
	r.retired[name] = w
}

func (r *Registry) publish(t *Topic) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if w, ok := r.watchers[t.Name]; ok && w.topic == t {
		r.topics[t.Name] = t
		// A format v1 table may have no UUID: nothing can name it by id.
		if other, ok := r.byID[t.ID]; t.ID != uuid.Nil && (!ok || t.Name <= other.Name) {
			r.byID[t.ID] = t
		}
	}
}
