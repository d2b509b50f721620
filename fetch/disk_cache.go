package fetch

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/rs/zerolog"
)

// diskCache keeps encoded batches in append-only segment files, so that a
// topic larger than the memory cache is still served warm: the second
// reader of a range gets it from the OS page cache, as Kafka serves its log,
// instead of planning, decoding and encoding the snapshot again. It holds
// at most maxBytes and maxEntries batches: the oldest segment file goes
// first. The entry bound holds its in-memory index to a few megabytes: a
// streaming table's batches are a few hundred bytes, and ten gigabytes of
// them indexed would be tens of millions of entries, a heap growing for
// days past the gateway's memory limit. The cache is not
// kept across restarts (its index lives in memory); a read or write error
// disables it, with a log line, and fetches go on without it.
type diskCache struct {
	dir      string
	maxBytes int64
	segBytes int64
	// maxEntries bounds the index; a segment holds at most segEntries.
	maxEntries, segEntries int
	log                    zerolog.Logger

	mu   sync.RWMutex
	segs []*diskSegment // oldest first, their ids consecutive
	// index and the segments' keys hold no pointer (the collector traced
	// the 65,536 entries' strings and segment pointers on every cycle):
	// a batch's topic, encoding and compression are a number in names.
	index    map[diskKey]diskSlot
	names    map[diskName]uint32
	bytes    int64
	nextID   int
	disabled bool
	// held counts the references reads (Spans) hold on segments, to be
	// released once written (Stats.DiskRangesHeld).
	held atomic.Int64
}

// diskName is what of a batchKey is text.
type diskName struct{ topic, encoding, compression string }

// diskKey is a batchKey with its text numbered (diskCache.names).
type diskKey struct {
	name                uint32
	partition, epoch    int32
	baseOffset, records int64
	segmentSnapshot     int64
	segmentKind         int32
}

// diskSlot is where a batch lies: in the segment with id seg.
type diskSlot struct {
	seg int64
	off int64
	n   int64
}

type diskSegment struct {
	id   int64
	f    *os.File
	size int64
	keys []diskKey
	// refs counts the reads (Spans) that will send ranges of the file
	// straight from it (sendfile), and the writes in flight. An evicted
	// segment is retired: its file is unlinked at once but closed only
	// when the last of them is done.
	refs      atomic.Int32
	held      *atomic.Int64 // the cache's count of references
	retired   atomic.Bool
	closeOnce sync.Once
}

func (s *diskSegment) unref() {
	s.held.Add(-1)
	if s.refs.Add(-1) == 0 && s.retired.Load() {
		s.closeFile()
	}
}

// unrefWrite drops the reference a write in flight holds (diskCache.add).
func (s *diskSegment) unrefWrite() {
	if s.refs.Add(-1) == 0 && s.retired.Load() {
		s.closeFile()
	}
}

// retire is called with the segment out of the index, so that no new
// reference can be taken.
func (s *diskSegment) retire() {
	s.retired.Store(true)
	if s.refs.Load() == 0 {
		s.closeFile()
	}
}

func (s *diskSegment) closeFile() { s.closeOnce.Do(func() { s.f.Close() }) }

type diskLoc struct {
	seg *diskSegment
	off int64
	n   int
}

// newDiskCache empties dir (what an earlier process left cannot be indexed)
// and returns a cache in it.
func newDiskCache(dir string, maxBytes int64, log zerolog.Logger) (*diskCache, error) {
	if err := os.RemoveAll(dir); err != nil {
		return nil, fmt.Errorf("batch disk cache %s: %w", dir, err)
	}
	// Encoded table rows: owner only, as the state store.
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("batch disk cache %s: %w", dir, err)
	}
	seg := min(max(maxBytes/16, 1<<20), 64<<20)
	d := &diskCache{dir: dir, maxBytes: maxBytes, segBytes: seg, log: log,
		index: map[diskKey]diskSlot{}, names: map[diskName]uint32{}}
	d.setMaxEntries(diskCacheMaxEntries)
	return d, nil
}

// diskCacheMaxEntries bounds the batches the disk cache indexes: some 200
// bytes of heap each (the index entry and the segment's key), 13 MiB in
// all. Batches of a megabyte fill the byte bound first; only small ones
// meet this.
const diskCacheMaxEntries = 1 << 16

func (d *diskCache) setMaxEntries(n int) {
	// Sixteen segments, as the byte bound divides them, so an eviction
	// drops a sixteenth of the index.
	d.maxEntries, d.segEntries = max(n, 1), max(n/16, 1)
}

// keyOf is k's index key; ok is false when no batch of its name was
// ever added. Called with d.mu held.
func (d *diskCache) keyOf(k batchKey) (diskKey, bool) {
	id, ok := d.names[diskName{k.topic, k.encoding, k.compression}]
	return diskKeyNamed(id, k), ok
}

// diskKeyNamed is the index key of k under the number of its name.
func diskKeyNamed(id uint32, k batchKey) diskKey {
	return diskKey{name: id, partition: k.partition, epoch: k.epoch, baseOffset: k.baseOffset, records: int64(k.batchRecords),
		segmentSnapshot: k.segmentSnapshot, segmentKind: int32(k.segmentKind)}
}

// lookup returns where the batch named k is. Called with d.mu held.
func (d *diskCache) lookup(k batchKey) (diskLoc, bool) {
	key, ok := d.keyOf(k)
	if !ok || d.disabled {
		return diskLoc{}, false
	}
	slot, ok := d.index[key]
	if !ok {
		return diskLoc{}, false
	}
	seg := d.segment(slot.seg)
	if seg == nil {
		return diskLoc{}, false
	}
	return diskLoc{seg: seg, off: slot.off, n: int(slot.n)}, true
}

// segment returns the live segment with id, nil if there is none.
func (d *diskCache) segment(id int64) *diskSegment {
	if len(d.segs) == 0 {
		return nil
	}
	i := id - d.segs[0].id
	if i < 0 || i >= int64(len(d.segs)) || d.segs[i].id != id {
		return nil
	}
	return d.segs[i]
}

// appendTo reads the batch named k into dst when it is cached and no
// larger than room (see batchCache.appendTo).
func (d *diskCache) appendTo(k batchKey, dst []byte, room int) ([]byte, int, bool) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	loc, ok := d.lookup(k)
	if !ok {
		return dst, 0, false
	}
	if loc.n > room {
		return dst, loc.n, true
	}
	at := len(dst)
	dst = slices.Grow(dst, loc.n)[:at+loc.n]
	// ReadAt is safe concurrently; the read lock keeps the segment from
	// being closed by an eviction meanwhile.
	if _, err := loc.seg.f.ReadAt(dst[at:], loc.off); err != nil {
		d.log.Error().Err(err).Str("file", loc.seg.f.Name()).Msg("batch disk cache read failed; disabling it")
		go d.disable()
		return dst[:at], 0, false
	}
	return dst, loc.n, true
}

// has reports whether the batch named k is cached.
func (d *diskCache) has(k batchKey) bool {
	d.mu.RLock()
	defer d.mu.RUnlock()
	_, ok := d.lookup(k)
	return ok
}

// ref returns where the batch named k is when it is cached and no larger
// than room, with a reference on its segment that keeps the file open until
// released (diskSegment.unref); n is its size whenever it is cached.
func (d *diskCache) ref(k batchKey, room int) (loc diskLoc, n int, ok bool) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	loc, ok = d.lookup(k)
	if !ok {
		return diskLoc{}, 0, false
	}
	if loc.n <= room {
		loc.seg.refs.Add(1)
		d.held.Add(1)
	}
	return loc, loc.n, true
}

// add writes v to the current segment and reports whether the cache holds
// k afterwards. The write itself runs outside d.mu: its place in the
// segment is reserved first, the segment referenced so that an eviction
// meanwhile leaves its file open, and the batch indexed once written. A
// write of a batch of half a megabyte under the lock held up every
// fetch's look-up while the read-ahead workers filled the cache.
func (d *diskCache) add(k batchKey, v []byte) bool {
	d.mu.Lock()
	if d.disabled || int64(len(v)) > d.segBytes {
		d.mu.Unlock()
		return false
	}
	name := diskName{k.topic, k.encoding, k.compression}
	id, ok := d.names[name]
	if !ok {
		// A name per topic, format and codec served: a handful.
		id = uint32(len(d.names))
		d.names[name] = id
	}
	key := diskKeyNamed(id, k)
	if _, ok := d.index[key]; ok {
		d.mu.Unlock()
		return true
	}
	cur := d.current()
	if cur == nil || cur.size+int64(len(v)) > d.segBytes || len(cur.keys) >= d.segEntries {
		var err error
		if cur, err = d.rotate(); err != nil {
			d.log.Error().Err(err).Msg("batch disk cache cannot create a segment; disabling it")
			d.disableLocked()
			d.mu.Unlock()
			return false
		}
	}
	slot := diskSlot{seg: cur.id, off: cur.size, n: int64(len(v))}
	cur.size += slot.n
	d.bytes += slot.n
	// A reference of its own, not counted in held (what reads hold).
	cur.refs.Add(1)
	d.mu.Unlock()

	_, err := cur.f.WriteAt(v, slot.off)

	d.mu.Lock()
	defer d.mu.Unlock()
	defer cur.unrefWrite()
	if err != nil {
		// A full disk must not fail fetches: serve from memory only.
		d.log.Error().Err(err).Str("file", cur.f.Name()).Msg("batch disk cache write failed; disabling it")
		d.disableLocked()
		return false
	}
	if d.disabled || d.segment(cur.id) != cur {
		return false // evicted or disabled while written
	}
	if _, ok := d.index[key]; !ok {
		d.index[key] = slot
		cur.keys = append(cur.keys, key)
	}
	for (d.bytes > d.maxBytes || len(d.index) > d.maxEntries) && len(d.segs) > 1 {
		d.dropOldest()
	}
	_, kept := d.index[key]
	return kept
}

func (d *diskCache) current() *diskSegment {
	if len(d.segs) == 0 {
		return nil
	}
	return d.segs[len(d.segs)-1]
}

func (d *diskCache) rotate() (*diskSegment, error) {
	name := filepath.Join(d.dir, fmt.Sprintf("%08d.batches", d.nextID))
	d.nextID++
	f, err := os.OpenFile(name, os.O_CREATE|os.O_RDWR|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, err
	}
	s := &diskSegment{id: int64(d.nextID - 1), f: f, held: &d.held}
	d.segs = append(d.segs, s)
	return s, nil
}

func (d *diskCache) dropOldest() {
	s := d.segs[0]
	d.segs = d.segs[1:]
	for _, k := range s.keys {
		delete(d.index, k)
	}
	d.bytes -= s.size
	if err := os.Remove(s.f.Name()); err != nil {
		d.log.Warn().Err(err).Str("file", s.f.Name()).Msg("cannot remove an evicted batch cache segment")
	}
	s.retire()
}

func (d *diskCache) disable() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.disableLocked()
}

func (d *diskCache) disableLocked() {
	if d.disabled {
		return
	}
	d.disabled = true
	for len(d.segs) > 0 {
		d.dropOldest()
	}
}

// close removes the cache's files.
func (d *diskCache) close() {
	d.disable()
	os.RemoveAll(d.dir)
}
