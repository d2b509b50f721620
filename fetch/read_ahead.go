package fetch

import (
	"context"
	"runtime"
	"sync"

	"github.com/rs/zerolog"

	"github.com/lakegw/lakegw/internal/bytepool"
	"github.com/lakegw/lakegw/topics"
)

// readAhead encodes, in the background, the batches a consumer on the cold
// frontier will ask for next. A consumer reads one fetch at a time: without
// it, the gateway derives and encodes while the client waits, then waits
// while the client decodes, and one core sits idle. With it, up to
// GOMAXPROCS workers encode ahead of the consumer (deriving the next
// snapshot while the consumer still reads the current one), and the
// consumer's fetches find their batches in the caches.
//
// Work is bounded: at most window batches past the consumer's last fetch,
// and at most GOMAXPROCS workers across all partitions; without a free
// worker nothing is started (read-ahead is an optimisation, never a queue).
type readAhead struct {
	r      *Reader
	window int64 // in batches
	log    zerolog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	slots  chan struct{}

	mu    sync.Mutex
	parts map[aheadKey]*aheadState
}

type aheadKey struct {
	topic       string
	partition   int32
	epoch       int32
	compression string
}

// aheadState is the read-ahead of one partition: batches below next are
// encoded or being encoded; workers go on until next reaches target.
type aheadState struct {
	next, target int64
	workers      int
}

func newReadAhead(r *Reader, window int, log zerolog.Logger) *readAhead {
	if window == 0 {
		window = 256
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &readAhead{r: r, window: int64(max(window, 0)), log: log, ctx: ctx, cancel: cancel,
		slots: make(chan struct{}, runtime.GOMAXPROCS(0)), parts: map[aheadKey]*aheadState{}}
}

// close stops the workers and waits for them.
func (a *readAhead) close() {
	a.cancel()
	a.wg.Wait()
}

// following reports whether a read-ahead of the partition is under way.
func (a *readAhead) following(topic string, p, epoch int32, compression string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	_, ok := a.parts[aheadKey{topic, p, epoch, compression}]
	return ok
}

// advance moves the partition's read-ahead to the window after offset, the
// offset the consumer asks for next, and starts workers while slots are
// free.
func (a *readAhead) advance(t *topics.Topic, p, epoch int32, compression string, offset int64) {
	if a.window == 0 || a.ctx.Err() != nil {
		return
	}
	k := aheadKey{t.Name, p, epoch, compression}
	a.mu.Lock()
	defer a.mu.Unlock()
	st, ok := a.parts[k]
	if !ok {
		st = &aheadState{next: offset}
		a.parts[k] = st
	}
	window := a.window
	if a.r.cache.disk == nil {
		// Memory alone: encoding further ahead than half the memory tier
		// holds would evict batches before the consumer gets to them.
		if size := a.r.lastBatchSize.Load(); size > 0 {
			window = min(window, a.r.cfg.CacheBytes/2/size)
		}
	}
	st.next = max(st.next, offset)
	st.target = max(st.target, offset+window*int64(t.Config.BatchRecords))
	for st.workers < cap(a.slots) {
		select {
		case a.slots <- struct{}{}:
		default:
			if st.workers == 0 {
				delete(a.parts, k)
			}
			return
		}
		st.workers++
		a.wg.Add(1)
		go a.work(t, k, st)
	}
}

// work encodes the partition's next batch until the target is reached, the
// partition's end is, or encoding fails (the consumer's own fetch then
// meets the error and reports it).
func (a *readAhead) work(t *topics.Topic, k aheadKey, st *aheadState) {
	defer a.wg.Done()
	defer func() { <-a.slots }()
	for {
		a.mu.Lock()
		// The segment and the fence epoch from one view: a partition
		// rewritten since the read-ahead began is not read ahead.
		v := t.Index.View(k.partition)
		seg, ok := v.Locate(st.next)
		if !ok || st.next >= st.target || a.ctx.Err() != nil || v.FenceEpoch() != k.epoch {
			st.workers--
			if st.workers == 0 {
				delete(a.parts, k)
			}
			a.mu.Unlock()
			return
		}
		first, last := batchBounds(t, seg, st.next)
		st.next = seg.BaseOffset + last
		a.mu.Unlock()

		enc := t.Encoding()
		key := batchKeyOf(t, enc, seg, seg.BaseOffset+first, k.compression)
		if a.r.cache.has(key) {
			continue
		}
		if a.r.claim(key) != nil {
			continue // a consumer or another worker is on it
		}
		batch, err := a.r.encodeAndCache(a.ctx, t, enc, seg, k.partition, k.compression, first, last, key, false)
		if err != nil {
			a.log.Debug().Err(err).Str("topic", k.topic).Int32("partition", k.partition).Msg("read-ahead stopped")
			a.mu.Lock()
			st.target = 0 // stop the partition's other workers too
			a.mu.Unlock()
			continue
		}
		a.r.stats.encodedAhead.Add(1)
		bytepool.Put(batch)
	}
}
