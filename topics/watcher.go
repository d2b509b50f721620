package topics

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync/atomic"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/rs/zerolog"

	"github.com/lakegw/lakegw/changelog"
	"github.com/lakegw/lakegw/derive"
	"github.com/lakegw/lakegw/lake"
	"github.com/lakegw/lakegw/offsets"
)

// watcher polls one table and extends its topic's index.
type watcher struct {
	r      *Registry
	name   string
	src    tableSource
	log    zerolog.Logger
	cancel context.CancelFunc
	ctx    context.Context

	topic *Topic
	// published is set once the topic is served (publish).
	published bool
	// lsmLogPath and lsmLog are the changelog log of an LSM table as last
	// read (see refreshLog).
	lsmLogPath string
	lsmLog     *changelog.LSMLog
	// pinnedPath, pinnedLog and pinnedIDs are the pinned log of any other
	// table as last read (see refreshPinned).
	pinnedPath string
	pinnedLog  *changelog.PinnedLog
	pinnedIDs  map[int64]bool
	lastMeta   string
	lastErr    string
	// meta parses the table's successive metadata files, each from what
	// the previous one parsed (lake.MetadataReader).
	meta *lake.MetadataReader
	// failures counts the polls in a row that failed: a damaged table is
	// retried with backoff (see retryDelay), not re-read every interval.
	failures  int
	firstSync chan struct{}

	// prev is the stopped watcher this one succeeds under the same topic
	// name, nil if none. Both write the topic's index: run waits for prev
	// to return before it opens the index.
	prev *watcher
	// done is closed when run has returned: the watcher writes nothing
	// any more.
	done chan struct{}
	// kick asks for a poll now (Registry.Kick): a commit through this
	// gateway wakes its consumers without waiting for the poll interval.
	kick chan struct{}
	// reopen is set when the table's configuration of the topic changed:
	// the registry replaces this watcher with one that opens the topic
	// anew.
	reopen atomic.Bool
}

func newWatcher(parent context.Context, r *Registry, name string, src tableSource, prev *watcher) *watcher {
	ctx, cancel := context.WithCancel(parent)
	return &watcher{r: r, name: name, src: src, ctx: ctx, cancel: cancel, prev: prev, meta: lake.NewMetadataReader(),
		log: r.log.With().Str("topic", name).Logger(), firstSync: make(chan struct{}), done: make(chan struct{}), kick: make(chan struct{}, 1)}
}

// stop asks the watcher to return; done says when it has.
func (w *watcher) stop() { w.cancel() }

func (w *watcher) run() {
	defer close(w.done)
	if w.prev != nil {
		// The predecessor was stopped but may be in the middle of an
		// index write; wait even if this watcher is stopped too, so
		// that done still means every predecessor has returned.
		<-w.prev.done
		w.prev = nil
	}
	ctx := w.ctx
	defer w.cancel()
	defer func() {
		if w.topic != nil {
			w.topic.streams.closeAll()
		}
	}()
	first := true
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			if first {
				close(w.firstSync)
			}
			return
		case <-timer.C:
		case <-w.kick:
			timer.Stop() // Go 1.23 timers: nothing stale to drain
		}
		w.poll(ctx)
		if first {
			first = false
			close(w.firstSync)
		}
		timer.Reset(retryDelay(w.r.cfg.PollInterval, w.failures))
	}
}

// maxRetryDelay bounds the backoff of a failing table: a repaired table
// (a restored file) is served again within it.
const maxRetryDelay = 30 * time.Second

// retryDelay is the wait before the next poll after failures failed polls
// in a row: the poll interval, doubled per failure up to maxRetryDelay.
// Each retry of a damaged snapshot reads its files again.
func retryDelay(interval time.Duration, failures int) time.Duration {
	d := interval
	for range min(failures, 16) {
		if d >= maxRetryDelay {
			break
		}
		d *= 2
	}
	return min(d, max(maxRetryDelay, interval))
}

// poll reloads the table and indexes what is new. Errors are logged once
// per distinct error (polling repeats them every interval) and recorded on
// the topic so that fetches can report them.
func (w *watcher) poll(ctx context.Context) {
	err := w.sync(ctx)
	if ctx.Err() != nil {
		return
	}
	if w.topic != nil {
		// A topic no consumer reads any more closes its idle streams too.
		w.topic.streams.closeIdle(time.Now())
	}
	if err != nil {
		w.failures++
		var le *loadError
		transient := errors.As(err, &le)
		if msg := err.Error(); msg != w.lastErr {
			w.lastErr = msg
			if transient {
				w.log.Warn().Err(err).Msg("cannot load table; retrying on the next poll")
			} else {
				w.log.Error().Err(err).Msg("cannot index table; serving what is indexed")
			}
		}
		// A table that cannot be loaded now says nothing about its
		// snapshots: consumers just see no new data (and a damaged table
		// stays reported as damaged) until a poll gets through.
		if w.topic != nil && !transient {
			w.topic.setIndexError(err)
		}
		return
	}
	w.failures = 0
	if w.lastErr != "" {
		w.log.Info().Msg("table indexing recovered")
		w.lastErr = ""
	}
	if w.topic != nil {
		w.topic.setIndexError(nil)
	}
}

// loadError is a failure to load the table's metadata (the catalog or the
// metadata file unreachable): unlike a snapshot whose files are missing or
// corrupt, it is not the table's fault, and the next poll may succeed.
type loadError struct{ err error }

func (e *loadError) Error() string { return e.err.Error() }
func (e *loadError) Unwrap() error { return e.err }

// load loads the table; loc is its current metadata location as the
// catalog's pointer gives it, "" when there is none to ask.
func (w *watcher) load(ctx context.Context, loc string) (*table.Table, error) {
	if !w.src.fromCat {
		return lake.OpenTableAt(ctx, w.src.ident, w.src.metaLoc, w.r.cfg.CatalogProps, w.src.remaps)
	}
	var tbl *table.Table
	var err error
	if loc != "" {
		tbl, err = lake.LoadTableAt(ctx, w.r.cat, w.src.ident, loc, w.meta)
	} else {
		tbl, err = w.r.cat.LoadTable(ctx, w.src.ident)
	}
	if err != nil {
		return nil, fmt.Errorf("load table: %w", err)
	}
	return tbl, nil
}

func (w *watcher) sync(ctx context.Context) error {
	if w.topic != nil && !w.src.fromCat && w.lastErr == "" {
		// A registered table is pinned to its metadata file: nothing new
		// can appear until it is registered again.
		return nil
	}
	var loc string
	if w.src.fromCat && w.r.pointers != nil {
		// An idle poll reads one catalog row, not the metadata JSON,
		// which grows with the table's history; a busy one parses what
		// the new metadata file adds.
		l, ok, err := w.r.pointers.Location(ctx, w.src.ident)
		if err != nil {
			return &loadError{err}
		}
		if ok && l == w.lastMeta && w.topic != nil && w.lastErr == "" {
			return nil
		}
		if ok {
			loc = l
		}
	}
	tbl, err := w.load(ctx, loc)
	if err != nil {
		return &loadError{err}
	}
	if tbl.MetadataLocation() == w.lastMeta && w.lastErr == "" {
		return nil
	}
	if w.topic == nil {
		if err := w.openTopic(ctx, tbl); err != nil {
			return err
		}
	} else if changed, err := w.configChanged(tbl); err != nil || changed {
		// A changed lakegw.* property (IncrementalAlterConfigs,
		// CreatePartitions) reshapes the topic: a successor opens it
		// with the new configuration while this one serves on.
		return err
	} else if err := w.followSchema(ctx, tbl); err != nil {
		return err
	}
	if err := w.refreshLog(ctx, tbl); err != nil {
		return err
	}
	if err := w.refreshPinned(ctx, tbl); err != nil {
		return err
	}
	// index publishes tbl once the index agrees with it: fetches must not
	// look up an indexed snapshot in a table state that expired it.
	if err := w.index(ctx, tbl); err != nil {
		if !w.published {
			w.publish(tbl)
		}
		return err
	}
	w.lastMeta = tbl.MetadataLocation()
	return nil
}

// A topic's plan cache holds the plans of recent snapshots (the watcher
// needs the last one; fetches deriving in order, several at a time, use
// the others, and a cold reader's first derivation plans a run of them at
// once), up to planCacheFiles live data files in all (some 150 bytes
// each, and the slim copy of each file, shared by the plans that list it,
// derive.slimFile): the file bound is what limits the memory.
const (
	planCachePlans = 64
	planCacheFiles = 1 << 18
)

func (w *watcher) openTopic(ctx context.Context, tbl *table.Table) error {
	cfg, err := w.r.cfg.Defaults.withTableProps(tbl.Properties())
	if err != nil {
		return err
	}
	format, err := changelog.FormatByName(cfg.Format)
	if err != nil {
		return err
	}
	open := offsets.Open
	if changelog.IsRawTable(tbl.Properties()) {
		// Partitions are only ever added to a raw topic, and its records
		// stay where they were produced.
		open = offsets.OpenGrowing
	}
	idx, err := open(ctx, w.r.store, w.name, tbl.Metadata().TableUUID().String(), cfg.Partitions)
	if err != nil {
		return err
	}
	t := &Topic{Name: w.name, Ident: w.src.ident, ID: tbl.Metadata().TableUUID(), Config: cfg, Format: format, Index: idx, changed: make(chan struct{}), changes: w.r.changes, rowGroups: w.r.rowGroups,
		plans: derive.NewPlanCache(planCachePlans, planCacheFiles), lifetime: w.ctx, streamMinRecords: w.r.cfg.IndexDeriveMaxRecords}
	if changelog.IsRawTable(tbl.Properties()) {
		t.raw = derive.NewRawFiles()
	}
	if chunk := w.r.cfg.StreamChunkRecords; chunk > 0 {
		// Whole batches: a batch never spans two chunks.
		batch := int64(cfg.BatchRecords)
		t.chunkRecords = (chunk + batch - 1) / batch * batch
	}
	if err := w.setEncoding(ctx, t, encodingOf(tbl, cfg)); err != nil {
		return err
	}
	w.topic = t
	return nil
}

// configChanged reports whether tbl's properties configure the topic
// otherwise than when it was opened, and then asks the registry for a
// successor (Registry.refreshTables reopens a watcher marked reopen).
func (w *watcher) configChanged(tbl *table.Table) (bool, error) {
	cfg, err := w.r.cfg.Defaults.withTableProps(tbl.Properties())
	if err != nil {
		return false, err
	}
	if reflect.DeepEqual(cfg, w.topic.Config) {
		return false, nil
	}
	if !w.reopen.Swap(true) {
		w.log.Info().Msg("the table's topic configuration changed; reopening the topic")
		w.r.Relist()
	}
	return true, nil
}

// followSchema writes the topic's records in tbl's current schema from
// now on, when that changed (and the topic speaks the current schema):
// every offset is served re-encoded, under a new leader epoch.
func (w *watcher) followSchema(ctx context.Context, tbl *table.Table) error {
	t := w.topic
	enc := encodingOf(tbl, t.Config)
	if enc.Name == t.Encoding().Name {
		return nil
	}
	return w.setEncoding(ctx, t, enc)
}

// setEncoding records enc in the topic's index (a new leader epoch when
// the index served another encoding: at the log start when the records
// at its offsets changed, at its end when only how they are written did)
// and makes it the topic's.
func (w *watcher) setEncoding(ctx context.Context, t *Topic, enc *Encoding) error {
	was := t.Index.Encoding()
	relaid := !sameLayout(was, enc.Name)
	raised, err := t.Index.SetEncoding(ctx, enc.Name, relaid)
	if err != nil {
		return err
	}
	t.enc.Store(enc)
	switch {
	case raised && relaid:
		w.log.Warn().Str("encoding", enc.Name).Str("was", was).Int32("leader_epoch", t.Index.LeaderEpoch()).
			Msg("the topic's records are laid out differently from when it was last served (table, format, key); every consumer reads it again from the log start, under a new leader epoch")
	case raised:
		w.log.Info().Str("encoding", enc.Name).Str("was", was).Int32("leader_epoch", t.Index.LeaderEpoch()).
			Msg("the topic's records are written in another schema: every offset is served re-encoded, under a new leader epoch from the log end; consumers keep their positions")
	}
	return nil
}

// publish makes tbl the topic's table state, and serves the topic from its
// first state on: an index loaded from the state store may still name
// snapshots tbl expired, so the topic is served once its index was
// realigned with tbl (or failed to be: then it is served as far as it
// goes, with its index error).
func (w *watcher) publish(tbl *table.Table) {
	t := w.topic
	t.setTable(tbl)
	if w.published {
		return
	}
	w.published = true
	w.r.publish(t)
	w.log.Info().Str("format", t.Config.Format).Int32("partitions", t.Config.Partitions).
		Int64("high_watermark", t.Index.HighWatermark(0)).Msg("serving table")
}

// index brings the topic's index up to the table's main-branch history,
// and publishes tbl as the topic's table state before it indexes a
// snapshot only tbl holds.
func (w *watcher) index(ctx context.Context, tbl *table.Table) error {
	if refs, ok, err := w.newSnapshots(tbl); err != nil {
		return err
	} else if ok {
		w.publish(tbl)
		return w.appendSnapshots(ctx, tbl, refs, false)
	}
	return w.realign(ctx, tbl)
}

// newSnapshots returns the snapshots committed after the last indexed one,
// walking back from the main head no further than it: the common case
// costs the new snapshots, not the history. ok is false when the index
// must be aligned with the whole history: nothing indexed yet, the oldest
// indexed snapshot expired (a prefix to compact), or the last one no
// longer an ancestor of the main head (a rollback or rewrite).
func (w *watcher) newSnapshots(tbl *table.Table) (refs []changelog.SnapshotRef, ok bool, err error) {
	idx := w.topic.Index
	last, ok := idx.Last()
	if !ok {
		return nil, false, nil
	}
	first, _ := idx.First()
	meta := tbl.Metadata()
	if !w.holdsSnapshot(tbl, first.SnapshotID) {
		return nil, false, nil
	}
	return changelog.MainHistorySince(meta, changelog.SnapshotRef{SnapshotID: last.SnapshotID, SequenceNumber: last.SequenceNumber})
}

// realign aligns the index with the table's whole main-branch history:
// expired snapshots become a compacted prefix, a rewritten history is
// truncated under a new leader epoch, then what is new is appended.
func (w *watcher) realign(ctx context.Context, tbl *table.Table) error {
	hist, err := w.history(tbl)
	if err != nil {
		return err
	}
	t := w.topic
	indexed := t.Index.Snapshots()
	expired, start := alignHistory(indexed, hist)
	if start >= 0 && expired > 0 {
		if err := w.compactExpired(ctx, tbl, indexed, expired); err != nil {
			return err
		}
		indexed = t.Index.Snapshots()
		_, start = alignHistory(indexed, hist)
	}
	if start < 0 && len(hist) > 0 && hasExpiredParent(w.readable(tbl, hist[0].SnapshotID), hist[0].SnapshotID) && !indexedAny(indexed, hist) {
		// Every indexed snapshot expired while we were away: that is not a
		// rewrite, the topic goes on after its current end with the live
		// rows of the oldest retained snapshot.
		if err := w.resetToPrefix(ctx, tbl, hist[0]); err != nil {
			return err
		}
		indexed = t.Index.Snapshots()
		_, start = alignHistory(indexed, hist)
	}
	if start < 0 {
		// The indexed history is not a prefix of the table's: a rollback or
		// a rewritten branch. Keep what still agrees, drop the rest under a
		// new leader epoch.
		keep := commonPrefix(indexed, hist)
		w.log.Warn().Int("kept_snapshots", keep).Int("dropped_snapshots", len(indexed)-keep).
			Msg("table history was rewritten; truncating the topic under a new leader epoch")
		if err := t.Index.Truncate(ctx, keep); err != nil {
			return err
		}
		// Fetches waiting at the old high watermark answer now, with
		// the new one or a diverging epoch, rather than at MaxWait.
		t.notify()
		indexed = t.Index.Snapshots()
		_, start = alignHistory(indexed, hist)
		if start < 0 {
			return fmt.Errorf("offset index of %s does not align with the table history after truncation", t.Name)
		}
	}
	w.publish(tbl)
	return w.appendSnapshots(ctx, tbl, hist[start:], start == 0)
}

// appendSnapshots indexes refs, new snapshots of tbl in order. atStart
// says refs begin the table's retained history, so the first may follow
// snapshots expired before lakegw saw them.
func (w *watcher) appendSnapshots(ctx context.Context, tbl *table.Table, refs []changelog.SnapshotRef, atStart bool) error {
	t := w.topic
	enc := t.Encoding()
	grew := false
	defer func() {
		if grew {
			t.notify()
		}
	}()
	for i, ref := range refs {
		if atStart && i == 0 && (ref.LogStart || hasExpiredParent(tbl, ref.SnapshotID)) {
			// The table's history starts after snapshots that were expired
			// before lakegw saw them: the oldest retained snapshot's changes
			// cannot be derived, so the topic starts with its live rows.
			if err := w.indexPrefix(ctx, tbl, ref); err != nil {
				return err
			}
			grew = true
			continue
		}
		counts, c, from, err := w.indexCounts(ctx, tbl, ref, enc)
		if err != nil {
			return err
		}
		if atStart && i == 0 {
			if err := w.startAt(ctx, tbl, ref, counts); err != nil {
				return err
			}
		}
		if err := t.Index.Append(ctx, []offsets.Snapshot{{SnapshotID: ref.SnapshotID, SequenceNumber: ref.SequenceNumber, TimestampMs: ref.TimestampMs, Counts: counts}}); err != nil {
			return err
		}
		if c != nil {
			// Freshly committed snapshots are what waiting consumers read next.
			t.changes.Add(t.changesKey(ref.SnapshotID, offsets.KindChanges, enc), c)
		}
		grew = true
		w.log.Debug().Int64("snapshot_id", ref.SnapshotID).Int64("sequence_number", ref.SequenceNumber).
			Str("operation", ref.Operation).Ints64("records", counts).Str("counted_from", from).Msg("indexed snapshot")
	}
	return nil
}

// alignHistory compares the indexed snapshots with the table's main
// history. start is the position in hist of the first snapshot not yet
// indexed, or -1 when the index disagrees with hist (a rewritten history).
// expired is how many indexed snapshots precede hist[0]: they were expired
// from the table.
func alignHistory(indexed []offsets.Snapshot, hist []changelog.SnapshotRef) (expired, start int) {
	if len(indexed) == 0 {
		return 0, 0
	}
	off := 0
	if len(hist) > 0 {
		for off < len(indexed) && indexed[off].SnapshotID != hist[0].SnapshotID {
			off++
		}
		if off == len(indexed) {
			off = 0
		}
	}
	n := len(indexed) - off
	if n > len(hist) {
		return 0, -1
	}
	for i := 0; i < n; i++ {
		if indexed[off+i].SnapshotID != hist[i].SnapshotID {
			return 0, -1
		}
	}
	return off, n
}

// hasExpiredParent reports whether a snapshot names a parent that is no
// longer in the table metadata.
func hasExpiredParent(tbl *table.Table, snapshotID int64) bool {
	s := tbl.Metadata().SnapshotByID(snapshotID)
	return s != nil && s.ParentSnapshotID != nil && tbl.Metadata().SnapshotByID(*s.ParentSnapshotID) == nil
}

// indexPrefix indexes a snapshot as a compacted prefix: its live rows.
func (w *watcher) indexPrefix(ctx context.Context, tbl *table.Table, ref changelog.SnapshotRef) error {
	// A table that says where its offsets start (a lakegw LSM table) is
	// numbered as it was, under the epoch the prefix gets everywhere; any
	// other starts under a fresh epoch.
	if _, known, err := w.tableEnds(tbl, ref); err != nil {
		return err
	} else if known && w.topic.Index.Len() == 0 {
		if err := w.topic.Index.RaiseEpoch(ctx, prefixEpoch(ref)); err != nil {
			return err
		}
	} else if err := w.freshEpoch(ctx, tbl); err != nil {
		return err
	}
	n, err := w.addPrefix(ctx, tbl, ref, "live rows of a snapshot whose parent was expired", func(counts []int64) error {
		if err := w.startAt(ctx, tbl, ref, counts); err != nil {
			return err
		}
		return w.topic.Index.Append(ctx, []offsets.Snapshot{{Kind: offsets.KindCompactedPrefix, SnapshotID: ref.SnapshotID,
			SequenceNumber: ref.SequenceNumber, TimestampMs: ref.TimestampMs, Counts: counts}})
	})
	if err != nil {
		return err
	}
	w.log.Info().Int64("snapshot_id", ref.SnapshotID).Int64("live_rows", n).
		Msg("the table's history starts after expired snapshots; the topic starts with the live rows of its oldest snapshot")
	return nil
}

// freshEpoch starts an empty index (its state lost, or never kept) of a
// table whose history begins after expired snapshots under an epoch higher
// than any an earlier index of it could have used: offsets cannot be
// rebuilt as they were, and consumers must see a truncation rather than
// other records at their offsets. Epochs follow sequence numbers
// (offsets.FreshEpoch), so the table's last sequence number (the number
// of snapshots in format v1, which has none) bounds them.
func (w *watcher) freshEpoch(ctx context.Context, tbl *table.Table) error {
	idx := w.topic.Index
	if idx.Len() > 0 {
		return nil
	}
	meta := tbl.Metadata()
	bound := meta.LastSequenceNumber()
	if meta.Version() == 1 {
		bound = int64(len(meta.Snapshots()))
	}
	epoch := offsets.FreshEpoch(bound)
	if epoch <= idx.LeaderEpoch() {
		return nil
	}
	if err := idx.RaiseEpoch(ctx, epoch); err != nil {
		return err
	}
	w.log.Warn().Int32("leader_epoch", epoch).
		Msg("offset index rebuilt for a table whose early snapshots expired: offsets are renumbered under a new leader epoch")
	return nil
}

// addPrefix reads the live rows of ref, has index make them a compacted
// prefix segment (given their count per partition), and caches them for
// the fetches that follow: a new prefix is read from its start by every
// consumer at the log start. It returns how many there are. A large
// prefix of a single-partition topic (more data file rows than a watcher
// derives to index a snapshot) is counted without holding its rows
// (derive.SnapshotCount) and streamed by the fetches (Topic.ChangesAt):
// a streaming table that runs for months is read whole at every expiry.
func (w *watcher) addPrefix(ctx context.Context, tbl *table.Table, ref changelog.SnapshotRef, what string,
	index func(counts []int64) error) (int64, error) {
	t := w.topic
	if t.raw != nil {
		// A raw topic's rows are never deleted: the live rows of ref are
		// every record up to its end, read by offset like any other.
		ends, known, err := w.tableEnds(tbl, ref)
		if err != nil {
			return 0, fmt.Errorf("%s, snapshot %d: %w", what, ref.SnapshotID, err)
		}
		if !known {
			return 0, fmt.Errorf("%s, snapshot %d: its summary and its ancestors' record no end offsets of the raw topic", what, ref.SnapshotID)
		}
		var n int64
		for _, e := range ends {
			n += e
		}
		return n, index(ends)
	}
	enc := t.Encoding()
	readable := w.readable(tbl, ref.SnapshotID)
	if w.largePrefix(readable, ref) {
		n, ok, err := derive.SnapshotCount(ctx, readable, ref, t.deriveOptions(enc))
		if err != nil {
			return 0, fmt.Errorf("%s, snapshot %d: %w", what, ref.SnapshotID, err)
		}
		if ok {
			return n, index([]int64{n})
		}
	}
	c, err := derive.ReadSnapshot(ctx, readable, ref, t.deriveOptions(enc))
	if err != nil {
		return 0, fmt.Errorf("%s, snapshot %d: %w", what, ref.SnapshotID, err)
	}
	// Cached before the index publishes the prefix, so the first fetch at
	// the new log start finds its rows rather than deriving them again.
	key := t.changesKey(ref.SnapshotID, offsets.KindCompactedPrefix, enc)
	t.changes.Add(key, c)
	if err := index(c.CountByPartition()); err != nil {
		t.changes.Remove(key)
		return 0, err
	}
	return int64(len(c.Records)), nil
}

// largePrefix reports whether the live rows of ref are streamed rather
// than held: the topic streams (one partition, chunks on) and the
// snapshot's data files hold more rows than IndexDeriveMaxRecords (its
// summary's total-records; deletes can only make the live rows fewer, so
// a smaller one is read whole at once).
func (w *watcher) largePrefix(tbl *table.Table, ref changelog.SnapshotRef) bool {
	t := w.topic
	if t.chunkRecords <= 0 || t.Index.Partitions() != 1 {
		return false
	}
	total, ok := summaryCount(tbl.Metadata().SnapshotByID(ref.SnapshotID), "total-records")
	return ok && total > max(t.chunkRecords, t.streamMinRecords)
}

// indexedAny reports whether any snapshot of hist is indexed.
func indexedAny(indexed []offsets.Snapshot, hist []changelog.SnapshotRef) bool {
	ids := make(map[int64]bool, len(indexed))
	for _, s := range indexed {
		ids[s.SnapshotID] = true
	}
	for _, h := range hist {
		if ids[h.SnapshotID] {
			return true
		}
	}
	return false
}

// resetToPrefix restarts the topic, after its current end, with the live
// rows of ref.
func (w *watcher) resetToPrefix(ctx context.Context, tbl *table.Table, ref changelog.SnapshotRef) error {
	t := w.topic
	if _, known, err := w.tableEnds(tbl, ref); err != nil {
		return err
	} else if known {
		// The table says where ref's live rows start: the topic starts
		// there, as on every other gateway, under a new epoch (the
		// offsets after it may have named other records here).
		if err := t.Index.Truncate(ctx, 0); err != nil {
			return err
		}
		if err := w.indexPrefix(ctx, tbl, ref); err != nil {
			return err
		}
		w.log.Warn().Int64("snapshot_id", ref.SnapshotID).Int32("leader_epoch", t.Index.LeaderEpoch()).
			Msg("every indexed snapshot expired while the gateway was away; the topic starts again where the table says")
		t.notify()
		return nil
	}
	n, err := w.addPrefix(ctx, tbl, ref, "live rows of a snapshot whose history expired", func(counts []int64) error {
		return t.Index.ResetToPrefix(ctx, offsets.Snapshot{SnapshotID: ref.SnapshotID, SequenceNumber: ref.SequenceNumber,
			TimestampMs: ref.TimestampMs, Counts: counts})
	})
	if err != nil {
		return err
	}
	w.log.Warn().Int64("snapshot_id", ref.SnapshotID).Int64("live_rows", n).Int32("leader_epoch", t.Index.LeaderEpoch()).
		Msg("every indexed snapshot expired while the gateway was away; the topic continues with the live rows of the oldest retained snapshot")
	t.notify()
	return nil
}

// compactExpired replaces the expired snapshots and the earliest retained
// one by the live rows of that snapshot: its older history can no longer
// be read, and a consumer from the log start must still get the whole
// table.
func (w *watcher) compactExpired(ctx context.Context, tbl *table.Table, indexed []offsets.Snapshot, expired int) error {
	t := w.topic
	e := indexed[expired]
	ref := changelog.SnapshotRef{SnapshotID: e.SnapshotID, SequenceNumber: e.SequenceNumber, TimestampMs: e.TimestampMs}
	_, known, err := w.tableEnds(tbl, ref)
	if err != nil {
		return err
	}
	n, err := w.addPrefix(ctx, tbl, ref, "compacted prefix", func(counts []int64) error {
		if t.raw != nil {
			// The same records at the same offsets: no consumer is
			// truncated.
			return t.Index.MergePrefix(ctx, expired, counts)
		}
		if known {
			return t.Index.CompactPrefixUnder(ctx, expired, counts, prefixEpoch(ref))
		}
		return t.Index.CompactPrefix(ctx, expired, counts)
	})
	if err != nil {
		return err
	}
	if old := indexed[0]; old.Kind == offsets.KindCompactedPrefix && old.SnapshotID != e.SnapshotID {
		// The prefix this one replaces lies below the new log start: no
		// fetch can locate it again, so its rows leave memory now, not
		// when idle (a streaming table expires every few seconds, and
		// a minute of replaced prefixes was the largest growing part of
		// a soak's live heap).
		var count int64
		for _, n := range old.Counts {
			count += n
		}
		t.forget(old.SnapshotID, offsets.KindCompactedPrefix, count)
	}
	ev := w.log.Info()
	if t.raw != nil {
		// A raw topic's writer expires a snapshot with nearly every commit,
		// and its records stay where they were.
		ev = w.log.Debug()
	}
	ev.Int("expired_snapshots", expired).Int64("prefix_snapshot_id", e.SnapshotID).
		Int64("live_rows", n).Int32("leader_epoch", t.Index.LeaderEpoch()).
		Msg("older snapshots were expired; the topic now starts with the live rows of the earliest retained snapshot")
	t.notify()
	return nil
}

func commonPrefix(indexed []offsets.Snapshot, hist []changelog.SnapshotRef) int {
	i := 0
	for i < len(indexed) && i < len(hist) && indexed[i].SnapshotID == hist[i].SnapshotID {
		i++
	}
	return i
}
