package fetch

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/lakegw/lakegw/changelog"
	"github.com/lakegw/lakegw/internal/bytepool"
	"github.com/lakegw/lakegw/internal/limitedlog"
	"github.com/lakegw/lakegw/offsets"
	"github.com/lakegw/lakegw/topics"
)

// ErrOffsetOutOfRange is returned for an offset below the log start or
// above the high watermark.
var ErrOffsetOutOfRange = errors.New("offset out of range")

// Config configures the reader.
type Config struct {
	// CacheBytes bounds the cache of encoded batches.
	CacheBytes int64
	// CacheIdle drops a batch from memory once no fetch read it for this
	// long (0: never): the disk tier serves it from then on.
	CacheIdle time.Duration
	// ReadBudget is how long one read keeps adding batches once it has
	// some.
	ReadBudget time.Duration
	// DiskCacheDir and DiskCacheBytes set up a second tier of encoded
	// batches on local disk (off when either is unset).
	DiskCacheDir   string
	DiskCacheBytes int64
	// ReadAheadBatches is how many batches past a cold read are encoded
	// in the background (0: 256; negative: off).
	ReadAheadBatches int
}

// Reader reads record batches of topic partitions.
type Reader struct {
	cfg   Config
	cache *batchCache
	log   zerolog.Logger
	// encoders is a free list of batch encoders.
	encoders      chan *batchEncoder
	lastBatchSize atomic.Int64
	// encoding holds the batches being encoded, so that a consumer and
	// the read-ahead never encode the same one twice.
	encodingMu sync.Mutex
	encoding   map[batchKey]chan struct{}
	ahead      *readAhead
	stats      readerStats
	// failures limits the "fetch failed" lines to one per topic a second:
	// a consumer polling a partition with a damaged file fails every poll.
	failures *limitedlog.Log

	identityMu sync.RWMutex
	identity   []int32
}

// NewReader returns a reader; Close releases its disk cache.
func NewReader(cfg Config, log zerolog.Logger) (*Reader, error) {
	if cfg.ReadBudget <= 0 {
		cfg.ReadBudget = 500 * time.Millisecond
	}
	r := &Reader{cfg: cfg, cache: newBatchCache(cfg.CacheBytes, cfg.CacheIdle), log: log, failures: limitedlog.New(time.Second)}
	r.encoders = make(chan *batchEncoder, 2*runtime.GOMAXPROCS(0))
	r.encoding = map[batchKey]chan struct{}{}
	window := cfg.ReadAheadBatches
	if cfg.CacheBytes <= 0 && (cfg.DiskCacheDir == "" || cfg.DiskCacheBytes <= 0) {
		window = -1 // nowhere to keep what it would encode
	}
	r.ahead = newReadAhead(r, window, log)
	if cfg.DiskCacheDir != "" && cfg.DiskCacheBytes > 0 {
		d, err := newDiskCache(cfg.DiskCacheDir, cfg.DiskCacheBytes, log)
		if err != nil {
			return nil, err
		}
		r.cache.disk = d
	}
	return r, nil
}

// Close stops the read-ahead, waits for it, and removes the disk cache's
// files.
func (r *Reader) Close() {
	r.ahead.close()
	if r.cache.disk != nil {
		r.cache.disk.close()
	}
}

// Read appends to dst the record batches of partition p of t starting with
// the batch that holds offset, until at least one batch is appended and
// adding the next would exceed maxBytes, or the high watermark is reached.
// compression is the codec to use ("none" when the client cannot take the
// topic's codec).
func (r *Reader) Read(ctx context.Context, t *topics.Topic, p int32, offset int64, maxBytes int, compression string, dst []byte) ([]byte, error) {
	s := batchSink{arena: dst}
	v := t.Index.View(p)
	err := r.read(ctx, t, &v, p, offset, maxBytes, compression, &s)
	return s.arena, err
}

// read is Read into a sink, which may keep disk cache hits in their files,
// from one view v of the partition's index: every batch of the answer is
// located, encoded and cached under the epoch and high watermark the
// caller answers with, whatever a concurrent truncation does meanwhile.
// When a segment of v is gone before any batch is in hand, read starts
// again from the index as it is now and leaves that view in v.
func (r *Reader) read(ctx context.Context, t *topics.Topic, v *offsets.View, p int32, offset int64, maxBytes int, compression string, s *batchSink) error {
	if offset < v.LogStart() || offset > v.HighWatermark() {
		return ErrOffsetOutOfRange
	}
	// Each batch carries its snapshot's epoch (offsets/epochs.go); the
	// read-ahead follows the partition as long as no rewrite intervenes.
	fence := v.FenceEpoch()
	// One encoding for the whole answer: a schema change under it shows
	// in the next fetch, never half-way through this one's batches.
	enc := t.Encoding()
	start := s.n
	// Reading old snapshots means planning and decoding them; once some
	// batches are in hand, answer rather than let one fetch run past the
	// client's request timeout.
	deadline := time.Now().Add(r.cfg.ReadBudget)
	// A consumer on the cold frontier (this read encoded a batch), or one
	// following the read-ahead it started, gets the batches after this
	// read encoded in the background while it processes these.
	var encoded bool
	regone := 0 // segments found gone, looked up again
	defer func() {
		if encoded || r.ahead.following(t.Name, p, fence, compression) {
			r.ahead.advance(t, p, fence, compression, offset)
		}
	}()
	for {
		if s.n > start && time.Now().After(deadline) {
			return nil
		}
		seg, ok := v.Locate(offset)
		if !ok {
			return nil // at the high watermark
		}
		first, last := batchBounds(t, seg, offset)
		key := batchKeyOf(t, enc, seg, seg.BaseOffset+first, compression)
		room := maxBytes - (s.n - start)
		if s.n == start {
			room = math.MaxInt // the first batch goes out whatever its size
		}
		if n, cached := r.cache.appendTo(key, s, room); cached {
			if n > room {
				return nil
			}
		} else {
			if wait := r.claim(key); wait != nil {
				// A read-ahead worker or another consumer is encoding
				// this batch: wait for it, then find it in the caches.
				select {
				case <-wait:
				case <-ctx.Done():
					return ctx.Err()
				}
				continue
			}
			batch, err := r.encodeAndCache(ctx, t, enc, seg, p, compression, first, last, key, true)
			if errors.Is(err, topics.ErrSegmentGone) && regone < 3 {
				// The index was realigned under this read (an expiry
				// or a rollback): answer what is in hand, or look the
				// offset up again in the new index.
				regone++
				if s.n > start {
					return nil
				}
				// Nothing is in hand yet: the answer can start afresh
				// from the index as it is now.
				*v = t.Index.View(p)
				if offset < v.LogStart() || offset > v.HighWatermark() {
					return ErrOffsetOutOfRange
				}
				fence = v.FenceEpoch() // the realignment was a rewrite
				continue
			}
			if err != nil {
				return err
			}
			encoded = true
			fits := len(batch) <= room
			if fits {
				s.appendBytes(batch)
			}
			bytepool.Put(batch)
			if !fits {
				return nil
			}
		}
		offset = seg.BaseOffset + last
		if s.n-start >= maxBytes {
			return nil
		}
	}
}

// batchBounds returns the records [first, last) of seg, as ordinals in
// it, of the batch that holds offset. Batches start every BatchRecords
// records of a segment (the topic's, lakegw.batch-records), so their
// bounds depend only on the table and the index: every gateway of the
// table serves the same batches.
func batchBounds(t *topics.Topic, seg offsets.Segment, offset int64) (first, last int64) {
	n := int64(t.Config.BatchRecords)
	ordinal := offset - seg.BaseOffset
	first = ordinal - ordinal%n
	return first, min(first+n, seg.Count)
}

// claim marks key as being encoded by the caller and returns nil, or, when
// another goroutine already is, returns a channel closed once it is done.
// The caller of a nil claim must call encodeAndCache, which releases it.
func (r *Reader) claim(key batchKey) <-chan struct{} {
	r.encodingMu.Lock()
	defer r.encodingMu.Unlock()
	if ch, ok := r.encoding[key]; ok {
		return ch
	}
	r.encoding[key] = make(chan struct{})
	return nil
}

func (r *Reader) unclaim(key batchKey) {
	r.encodingMu.Lock()
	defer r.encodingMu.Unlock()
	close(r.encoding[key])
	delete(r.encoding, key)
}

// encodeAndCache encodes the batch of records [first, last) of seg, written
// under enc, into a pooled buffer, which it returns (the caller gives it
// back), caches it under key (named by enc), and releases the caller's
// claim on key.
//
// inMemory says whether the memory tier gets a copy too: a batch a consumer
// asks for is likely asked for again soon by the others at its place (the
// tail of a topic); one encoded ahead of a consumer catching up is read
// once by it, from the disk tier, and copying it into memory would only
// push out the tail.
func (r *Reader) encodeAndCache(ctx context.Context, t *topics.Topic, enc *topics.Encoding, seg offsets.Segment, p int32, compression string,
	first, last int64, key batchKey, inMemory bool) ([]byte, error) {
	defer r.unclaim(key)
	// Encode into a reused buffer: the tiers keep copies of their own,
	// and the answer gets its bytes from it.
	scratch := bytepool.Get(r.batchSizeHint())
	batch, err := r.encodeBatch(ctx, t, enc, seg, p, compression, key.baseOffset, first, last, scratch)
	if err != nil {
		bytepool.Put(scratch)
		return nil, err
	}
	r.lastBatchSize.Store(int64(len(batch)))
	r.stats.encoded.Add(1)
	if r.cache.add(key, batch, inMemory || r.cache.disk == nil) {
		// After the last batch of a snapshot (or of a streamed chunk of
		// one), all of it is on disk, and the memory its derivation holds
		// is better spent deriving the next.
		t.Encoded(seg, enc, last)
	}
	return batch, nil
}

// encodeBatch derives (or finds derived) the snapshot of seg, written under
// enc, and encodes its records [first, last) of partition p as one batch
// at offset base, under seg's leader epoch.
func (r *Reader) encodeBatch(ctx context.Context, t *topics.Topic, enc *topics.Encoding, seg offsets.Segment, p int32, compression string,
	base, first, last int64, dst []byte) ([]byte, error) {
	c, from, err := t.ChangesAt(ctx, seg, enc, first)
	if err != nil {
		return nil, fmt.Errorf("read snapshot %d of %s: %w", seg.SnapshotID, t.Name, err)
	}
	recs := r.partitionRecords(c, p)
	// ChangesAt checked the records against the index; these bounds
	// only keep a slip in chunking from reading past them.
	if n := int64(len(recs)); from > first || from+n < last {
		return nil, fmt.Errorf("snapshot %d of %s: records [%d, %d) of partition %d are not in the %d read from %d", seg.SnapshotID, t.Name, first, last, p, n, from)
	}
	be := r.getEncoder()
	defer r.putEncoder(be)
	out, err := be.encode(dst, batchSpec{baseOffset: base, leaderEpoch: seg.Epoch, compression: compression,
		changes: c, format: t.Format, recs: recs[first-from : last-from]})
	if err != nil {
		return nil, fmt.Errorf("encode batch at %d of %s/%d: %w", base, t.Name, p, err)
	}
	return out, nil
}

// getEncoder takes an idle encoder, or makes one. Encoders are kept in a
// bounded free list rather than a sync.Pool: their buffers grow to a
// batch's size, and a sync.Pool drops them at every collection, which on
// the cold path (one collection every few hundred MB allocated) meant
// growing them again for most batches.
func (r *Reader) getEncoder() *batchEncoder {
	select {
	case e := <-r.encoders:
		return e
	default:
		return new(batchEncoder)
	}
}

func (r *Reader) putEncoder(e *batchEncoder) {
	select {
	case r.encoders <- e:
	default: // the list is full: let this one go
	}
}

// batchSizeHint is the size the next encoded batch most likely has: the
// last one's, with room to spare.
func (r *Reader) batchSizeHint() int {
	return int(r.lastBatchSize.Load()) * 5 / 4
}

// partitionRecords returns the indexes into c.Records of partition p's
// records.
func (r *Reader) partitionRecords(c *changelog.Changes, p int32) []int32 {
	if c.Partitions <= 1 {
		return r.identityOf(len(c.Records))
	}
	return c.PartitionRecords(p)
}

// identityOf returns [0, n) without allocating once a large enough prefix
// exists: single-partition topics (the default) read records in order.
func (r *Reader) identityOf(n int) []int32 {
	r.identityMu.RLock()
	if len(r.identity) >= n {
		b := r.identity[:n]
		r.identityMu.RUnlock()
		return b
	}
	r.identityMu.RUnlock()
	r.identityMu.Lock()
	defer r.identityMu.Unlock()
	if len(r.identity) < n {
		nb := make([]int32, max(n, 2*len(r.identity)))
		for i := range nb {
			nb[i] = int32(i)
		}
		r.identity = nb
	}
	return r.identity[:n]
}
