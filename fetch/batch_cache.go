package fetch

import (
	"bytes"
	"time"

	"github.com/lakegw/lakegw/internal/sizedlru"
	"github.com/lakegw/lakegw/offsets"
	"github.com/lakegw/lakegw/topics"
)

// batchKey names an encoded batch by everything that shapes its bytes.
// Offsets are only stable within a leader epoch, so the epoch is part of
// the name; so is the topic's encoding (format, key, schema, table), so
// that a topic served anew in another format cannot be answered from the
// batches of the old one, whatever its epoch. The batch size is the
// reader's, the same for every key.
type batchKey struct {
	topic      string
	encoding   string
	partition  int32
	epoch      int32
	baseOffset int64
	// batchRecords: a batch at the same base holds more or fewer records
	// once the topic's lakegw.batch-records changes.
	batchRecords int
	compression  string
	// segment names the segment the batch was cut from: batches are cut
	// from a segment's base, so a merged prefix of a raw topic, which
	// keeps its offsets and epoch (offsets.Index.MergePrefix), cuts other
	// batches at the same bases than the snapshots it replaced.
	segmentSnapshot int64
	segmentKind     offsets.SegmentKind
}

// batchKeyOf names the batch at base of segment seg of t, written under enc
// with compression.
func batchKeyOf(t *topics.Topic, enc *topics.Encoding, seg offsets.Segment, base int64, compression string) batchKey {
	return batchKey{topic: t.Name, encoding: enc.Name, partition: seg.Partition, epoch: seg.Epoch, baseOffset: base,
		batchRecords: t.Config.BatchRecords, compression: compression, segmentSnapshot: seg.SnapshotID, segmentKind: seg.Kind}
}

// batchCache is an LRU of encoded batches bounded by total bytes, shared by
// every consumer: a second consumer of the same range is served without
// reading or encoding anything.
type batchCache struct {
	mem      *sizedlru.Cache[batchKey, []byte]
	maxBytes int64
	// disk, when set, holds batches beyond what memory holds.
	disk *diskCache
}

// newBatchCache returns a cache of at most maxBytes in memory, where a
// batch unread for idle (0: no bound) goes.
func newBatchCache(maxBytes int64, idle time.Duration) *batchCache {
	mem := sizedlru.New[batchKey](maxBytes, func(v []byte) int64 { return int64(len(v)) }).ExpireIdle(idle)
	return &batchCache{mem: mem, maxBytes: maxBytes}
}

// appendTo adds the batch named k to s when it is cached and no larger
// than room; n is its size whenever it is cached (ok), added or not. A batch
// found on disk is left in its file when s takes files, else read into s's
// arena; it is not copied into the memory tier: a sequential re-read of a
// topic larger than the memory tier would only churn it, and the OS page
// cache already keeps hot disk pages in memory.
func (c *batchCache) appendTo(k batchKey, s *batchSink, room int) (n int, ok bool) {
	if c.maxBytes > 0 {
		if v, ok := c.mem.Get(k); ok {
			if len(v) <= room {
				s.appendBytes(v)
			}
			return len(v), true
		}
	}
	if c.disk == nil {
		return 0, false
	}
	if s.files {
		loc, n, ok := c.disk.ref(k, room)
		if ok && n <= room {
			s.addFile(loc)
		}
		return n, ok
	}
	at := len(s.arena)
	s.arena, n, ok = c.disk.appendTo(k, s.arena, room)
	if ok && n <= room {
		s.addArena(at, n)
	}
	return n, ok
}

// has reports whether the batch named k is cached, without reading it.
func (c *batchCache) has(k batchKey) bool {
	if c.maxBytes > 0 {
		if _, ok := c.mem.Get(k); ok {
			return true
		}
	}
	return c.disk != nil && c.disk.has(k)
}

// add caches a freshly encoded batch on disk and, when inMemory, in
// memory, and reports whether the disk tier has it. It keeps no reference
// to v: the memory tier holds a copy, so that v can be a reused buffer.
func (c *batchCache) add(k batchKey, v []byte, inMemory bool) (onDisk bool) {
	if c.disk != nil {
		onDisk = c.disk.add(k, v)
	}
	// A batch over a quarter of the memory tier would push out most of
	// what the other consumers are reading.
	if !inMemory || c.maxBytes <= 0 || int64(len(v)) > c.maxBytes/4 {
		return onDisk
	}
	c.mem.Add(k, bytes.Clone(v))
	return onDisk
}
