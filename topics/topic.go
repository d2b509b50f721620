package topics

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
	"golang.org/x/sync/singleflight"

	"github.com/lakegw/lakegw/changelog"
	"github.com/lakegw/lakegw/derive"
	"github.com/lakegw/lakegw/offsets"
)

// Topic is one served table.
type Topic struct {
	Name  string
	Ident table.Identifier
	// ID is the UUID of the table the topic was opened on (its offset
	// index is that table's): the same on every gateway serving it, and
	// what the Kafka protocol knows the topic by (its topic id). Zero for
	// a Topic no watcher opened.
	ID     uuid.UUID
	Config TopicConfig
	Format changelog.Format
	Index  *offsets.Index

	// enc is how the topic's records are written now (encodingOf); it
	// changes with the table's current schema.
	enc atomic.Pointer[Encoding]

	// tbl is the table state the index agrees with; prevTbl the one
	// before it, which still holds the snapshots a realignment just
	// dropped from the index (fetches that located them a moment ago).
	tbl, prevTbl atomic.Pointer[table.Table]
	// retained is an LSM table's changelog log (nil: none), stored
	// before the table metadata that drops its snapshots; prevRetained
	// the one before it, which still lists the snapshots a move of the
	// log start just dropped from the index (as prevTbl does).
	retained, prevRetained atomic.Pointer[changelog.LSMLog]
	// pinned is a view of the table that also holds the snapshots its
	// pinned log keeps (nil: none), stored before the table metadata
	// that expired them; prevPinned the one before it.
	pinned, prevPinned atomic.Pointer[table.Table]

	mu      sync.Mutex
	changed chan struct{}
	// indexErr is why indexing is stuck (a damaged table), nil when not.
	indexErr error

	changes *changesCache
	// rowGroups is the registry's cache of decoded row groups.
	rowGroups *derive.RowGroupCache
	// lifetime ends when the topic stops being served; derivations run
	// under it.
	lifetime context.Context
	derive   singleflight.Group
	// failures holds the derivations that failed lately, each retried
	// only after a backoff.
	failures deriveFailures
	// plans keeps the plans of the snapshots derived last, so that the
	// next snapshot is planned from its parent's (nil: no cache).
	plans *derive.PlanCache
	// streams read the large appends of the topic chunk by chunk (see
	// ChangesAt): appends of more than streamMinRecords records (and more
	// than a chunk), in chunks of chunkRecords (0: none is streamed).
	streams          streamSet
	chunkRecords     int64
	streamMinRecords int64
	// raw locates a raw topic's records in its table's files (nil for
	// any other topic): they are read by offset, never derived.
	raw *derive.RawFiles
}

// Encoding returns how the topic's records are written now. A read takes
// it once and passes it to Changes, and keys what it caches by its Name.
// A Topic no watcher opened (a test's) writes records as written.
func (t *Topic) Encoding() *Encoding {
	if e := t.enc.Load(); e != nil {
		return e
	}
	return &asWritten
}

// asWritten is the encoding of a Topic that was given none: records as
// written, under no name.
var asWritten = Encoding{}

// Table returns the latest loaded table metadata.
func (t *Topic) Table() *table.Table { return t.tbl.Load() }

// setTable publishes tbl, a table state the index now agrees with.
func (t *Topic) setTable(tbl *table.Table) {
	if old := t.tbl.Load(); old != tbl {
		t.prevTbl.Store(old)
		t.tbl.Store(tbl)
	}
}

// tableFor returns the newest table state that holds snapshot id, with
// its parent if any does (deriving its changes reads both): a segment
// located just before a realignment dropped it is still derived from the
// state it was indexed from, and a snapshot a pin keeps past the table's
// retention from the view that holds the pinned log.
func (t *Topic) tableFor(id int64) *table.Table {
	tbl := t.Table()
	if holdsWithParent(tbl, id) {
		return tbl
	}
	for _, other := range []*table.Table{t.prevTbl.Load(), t.pinned.Load(), t.prevPinned.Load()} {
		if other != nil && holdsWithParent(other, id) {
			return other
		}
	}
	for _, other := range []*table.Table{t.prevTbl.Load(), t.pinned.Load(), t.prevPinned.Load()} {
		if other != nil && other.Metadata().SnapshotByID(id) != nil {
			return other
		}
	}
	return tbl
}

// ErrSegmentGone says that a segment could not be read because the index
// dropped it meanwhile (its snapshot expired or was rolled back): not a
// storage fault; the reader locates its offset again.
var ErrSegmentGone = errors.New("segment no longer indexed")

// holds reports whether the index still holds seg.
func (t *Topic) holds(seg offsets.Segment) bool {
	g, ok := t.Index.Locate(seg.Partition, seg.BaseOffset)
	return ok && g.SnapshotID == seg.SnapshotID && g.Kind == seg.Kind && g.BaseOffset == seg.BaseOffset
}

// Changed returns a channel closed the next time the index grows (or the
// topic's state otherwise changes). Fetches waiting at the high watermark
// select on it: no busy polling.
func (t *Topic) Changed() <-chan struct{} {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.changed
}

func (t *Topic) notify() {
	t.mu.Lock()
	defer t.mu.Unlock()
	close(t.changed)
	t.changed = make(chan struct{})
}

// IndexError returns why the topic cannot grow past its high watermark, such
// as a missing file in the next snapshot; nil when indexing is healthy.
func (t *Topic) IndexError() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.indexErr
}

func (t *Topic) setIndexError(err error) {
	t.mu.Lock()
	changed := (err == nil) != (t.indexErr == nil)
	t.indexErr = err
	t.mu.Unlock()
	if changed {
		t.notify()
	}
}

// Encoded tells the topic that records [0, last) of seg, written under
// enc, are encoded and kept in a batch cache: when last ends the records a
// Changes holds (the segment's, or a streamed chunk's), they need not stay
// in memory for later batches. Only single-partition topics drop them;
// the other partitions of a snapshot may not have been read yet.
func (t *Topic) Encoded(seg offsets.Segment, enc *Encoding, last int64) {
	if t.Index.Partitions() != 1 {
		return
	}
	key := t.changesKey(seg.SnapshotID, seg.Kind, enc)
	if size := t.streamChunk(seg); size > 0 && (last%size == 0 || last == seg.Count) {
		chunk := key
		chunk.chunk = (last-1)/size + 1
		t.changes.Remove(chunk)
	}
	if last == seg.Count {
		t.changes.Remove(key)
	}
}

// forget drops what the topic keeps of a segment no fetch can locate any
// more (below a new log start) of count records: its derived records,
// whole or in chunks, and its streams, now rather than when idle.
func (t *Topic) forget(snapshotID int64, kind offsets.SegmentKind, count int64) {
	enc := t.Encoding()
	key := t.changesKey(snapshotID, kind, enc)
	t.changes.Remove(key)
	if size := t.chunkRecords; size > 0 {
		for k := int64(1); k <= (count+size-1)/size; k++ {
			chunk := key
			chunk.chunk = k
			t.changes.Remove(chunk)
		}
	}
	t.streams.closeKey(streamKey{snapshotID: snapshotID, kind: kind, encoding: enc.Name})
}

// changesKey names the derived records of a segment of the topic, written
// under enc.
func (t *Topic) changesKey(snapshotID int64, kind offsets.SegmentKind, enc *Encoding) changesKey {
	return changesKey{topic: t.Name, encoding: enc.Name, snapshotID: snapshotID, kind: kind}
}

// Changes returns the records of an indexed segment written under enc (the
// topic's Encoding when the read began), deriving them at most once at a
// time and keeping the most recent in a bounded cache.
func (t *Topic) Changes(ctx context.Context, seg offsets.Segment, enc *Encoding) (*changelog.Changes, error) {
	return t.derived(ctx, seg, t.changesKey(seg.SnapshotID, seg.Kind, enc), func(ctx context.Context) (*changelog.Changes, error) {
		tbl := t.tableFor(seg.SnapshotID)
		ref := changelog.SnapshotRef{SnapshotID: seg.SnapshotID, SequenceNumber: seg.SequenceNumber, TimestampMs: seg.TimestampMs}
		if s := tbl.SnapshotByID(seg.SnapshotID); s != nil && s.Summary != nil {
			ref.Operation = string(s.Summary.Operation)
		}
		read := derive.Derive
		if seg.Kind == offsets.KindCompactedPrefix {
			read = derive.ReadSnapshot
		}
		c, err := read(ctx, tbl, ref, t.deriveOptions(enc))
		if err != nil {
			return nil, err
		}
		if got := c.CountByPartition(); int32(len(got)) != t.Index.Partitions() || got[seg.Partition] != seg.Count {
			return nil, fmt.Errorf("snapshot %d of %s now derives %v records per partition, the index says %d in partition %d: the table's files changed under the index",
				seg.SnapshotID, t.Name, got, seg.Count, seg.Partition)
		}
		return c, nil
	})
}

// ChangesAt returns the Changes that holds record first (an ordinal in
// seg) of an indexed segment written under enc, and base, the ordinal in
// seg of its record 0. That is the whole segment (base 0), or for a large
// append or compacted prefix one chunk of it, read by a stream
// (derive.Stream) that the next chunk's read continues: a consumer of a
// ten-million-row snapshot holds a chunk of it decoded, not all of it.
func (t *Topic) ChangesAt(ctx context.Context, seg offsets.Segment, enc *Encoding, first int64) (_ *changelog.Changes, base int64, _ error) {
	if t.raw != nil {
		return t.rawChunk(ctx, seg, enc, first)
	}
	size := t.streamChunk(seg)
	if size == 0 {
		c, err := t.Changes(ctx, seg, enc)
		return c, 0, err
	}
	whole := t.changesKey(seg.SnapshotID, seg.Kind, enc)
	if c, ok := t.changes.Get(whole); ok {
		return c, 0, nil
	}
	base = first - first%size
	c, err := t.chunk(ctx, seg, enc, base, size)
	if errors.Is(err, errNotStreamed) {
		c, err := t.Changes(ctx, seg, enc)
		return c, 0, err
	}
	if err == nil && first == base && base+size < seg.Count {
		// The first batch of a chunk: its consumer will want the next
		// chunk while it encodes this one's batches, so the next is read
		// now, on the core the encoding leaves (one chunk ahead, from a
		// read that asked, never from a read ahead itself).
		t.prefetch(seg, enc, base+size, size)
	}
	return c, base, err
}

// chunk returns the records [base, base+size) of seg (fewer at its end),
// read by a stream and cached; errNotStreamed when seg is not one a
// stream reads.
func (t *Topic) chunk(ctx context.Context, seg offsets.Segment, enc *Encoding, base, size int64) (*changelog.Changes, error) {
	n := min(size, seg.Count-base)
	key := t.changesKey(seg.SnapshotID, seg.Kind, enc)
	key.chunk = base/size + 1
	return t.derived(ctx, seg, key, func(ctx context.Context) (*changelog.Changes, error) {
		c, ok, err := t.streams.read(ctx, streamKey{snapshotID: seg.SnapshotID, kind: seg.Kind, encoding: enc.Name}, base, n, func() (*derive.Stream, bool, error) {
			tbl := t.tableFor(seg.SnapshotID)
			ref := changelog.SnapshotRef{SnapshotID: seg.SnapshotID, SequenceNumber: seg.SequenceNumber, TimestampMs: seg.TimestampMs}
			open := derive.OpenAppendStream
			if seg.Kind == offsets.KindCompactedPrefix {
				open = derive.OpenSnapshotStream
			}
			// The stream outlives this chunk's read: the topic's.
			s, ok, err := open(t.lifetime, tbl, ref, t.deriveOptions(enc))
			if ok && s.Len() != seg.Count {
				s.Close()
				return nil, false, fmt.Errorf("snapshot %d of %s now holds %d records, the index says %d: the table's files changed under the index",
					seg.SnapshotID, t.Name, s.Len(), seg.Count)
			}
			return s, ok, err
		})
		if err == nil && !ok {
			return nil, errNotStreamed
		}
		return c, err
	})
}

// prefetch reads the chunk of seg at base in the background, unless it is
// cached. The read belongs to the topic (it ends with it, or with the
// derivation timeout); one per chunk runs at a time (derived's
// singleflight), and its result, or its failure, is what the fetch that
// asks next finds.
func (t *Topic) prefetch(seg offsets.Segment, enc *Encoding, base, size int64) {
	key := t.changesKey(seg.SnapshotID, seg.Kind, enc)
	key.chunk = base/size + 1
	if _, ok := t.changes.Get(key); ok {
		return
	}
	go func() {
		_, _ = t.chunk(t.lifetime, seg, enc, base, size) // the fetch that asks meets any error
	}()
}

// errNotStreamed says a large segment is not one a stream reads (a
// snapshot that is no pure append): it is derived whole.
var errNotStreamed = errors.New("not a streamed append")

// streamChunk is the records per chunk of seg when it is read by a stream
// (0: seg is read whole): segments larger than a watcher derives to index
// them, on a single-partition topic.
func (t *Topic) streamChunk(seg offsets.Segment) int64 {
	if t.chunkRecords <= 0 || t.Index.Partitions() != 1 || seg.Count <= max(t.chunkRecords, t.streamMinRecords) {
		return 0
	}
	return t.chunkRecords
}

// derived returns the records key names, from the cache or by derive,
// run at most once at a time per key and kept in the cache.
func (t *Topic) derived(ctx context.Context, seg offsets.Segment, key changesKey, derive func(context.Context) (*changelog.Changes, error)) (*changelog.Changes, error) {
	if c, ok := t.changes.Get(key); ok {
		return c, nil
	}
	if err := t.failures.check(key, time.Now()); err != nil {
		if !t.holds(seg) {
			// Realigned since it failed (its files went with an
			// expiry): the reader locates the offset again.
			return nil, fmt.Errorf("%w: %w", ErrSegmentGone, err)
		}
		return nil, err
	}
	// The derivation belongs to the topic, not to the first fetch that
	// asked: a client that disconnects (or times out on a large snapshot)
	// must not cancel it for everyone waiting, nor make it start over.
	ch := t.derive.DoChan(fmt.Sprint(key.snapshotID, "/", key.kind, "/", key.encoding, "/", key.chunk, "/", key.partition), func() (_ any, err error) {
		ctx, cancel := context.WithTimeout(t.lifetime, deriveTimeout)
		defer cancel()
		defer func() {
			if err != nil && !errors.Is(err, errNotStreamed) && t.lifetime.Err() == nil && t.holds(seg) {
				// Still served and still indexed: the snapshot is
				// damaged (or unreadable for now), not abandoned.
				t.failures.failed(key, err, time.Now())
			}
		}()
		c, err := derive(ctx)
		if err != nil {
			return nil, err
		}
		t.changes.Add(key, c)
		t.failures.succeeded(key)
		return c, nil
	})
	select {
	case res := <-ch:
		if res.Err != nil {
			if !t.holds(seg) {
				return nil, fmt.Errorf("%w: %w", ErrSegmentGone, res.Err)
			}
			return nil, res.Err
		}
		return res.Val.(*changelog.Changes), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// deriveTimeout bounds one derivation, so a stuck read of the lake cannot
// hold a topic's readers forever.
const deriveTimeout = 10 * time.Minute

// deriveOptions derives records written under enc.
func (t *Topic) deriveOptions(enc *Encoding) derive.Options {
	return derive.Options{Partitions: t.Config.Partitions, KeyColumns: t.Config.KeyColumns, Target: enc.schema, PlanCache: t.plans, RowGroups: t.rowGroups,
		Retained: changelog.LSMLogs{t.retained.Load(), t.prevRetained.Load()}}
}

// Written reports whether lakegw writes the topic's table (a raw topic or
// a primary-key table): such a table has one writer at a time, so among
// gateways sharing the work one leads all its partitions.
func (t *Topic) Written() bool {
	tbl := t.Table()
	if tbl == nil {
		return false
	}
	props := tbl.Properties()
	return changelog.IsRawTable(props) || changelog.IsLSMTable(props)
}
