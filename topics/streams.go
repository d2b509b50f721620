package topics

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lakegw/lakegw/changelog"
	"github.com/lakegw/lakegw/derive"
	"github.com/lakegw/lakegw/offsets"
)

// streamSet keeps the streams (derive.Stream) of the large segments (an
// append's changes, a compacted prefix's live rows) a topic's consumers
// are reading chunk by chunk, so that reading one chunk after another
// decodes each file once. A consumer's next chunk finds the stream its
// last chunk left there; a consumer elsewhere gets a stream of its own
// (one that seeks), up to maxStreams per topic: the least recently used is
// closed to make room, and any idle for streamIdle when the topic reads
// again.
type streamSet struct {
	mu     sync.Mutex
	slots  []*streamSlot // least recently used first
	closed bool
}

// streamKey names the records of a segment written under an encoding.
type streamKey struct {
	snapshotID int64
	kind       offsets.SegmentKind
	encoding   string
}

// streamSlot is one stream. mu is held while it reads; next (guarded by
// the set's mu) is the record it will be at once the read under way is
// done, so that the next chunk's reader queues behind it rather than
// opening a stream of its own.
type streamSlot struct {
	key      streamKey
	next     int64
	lastUsed time.Time

	mu sync.Mutex
	s  *derive.Stream
	// notAppend says the segment is not one a stream reads; set while
	// mu is held, read by take under the set's.
	notAppend atomic.Bool
	closed    bool
}

const (
	maxStreams = 4
	streamIdle = 2 * time.Minute
)

// read returns records [from, from+n) of the snapshot key names, opening
// a stream with open when none is where they start; ok is false when the
// snapshot is not an append a stream reads (derive it whole), or the topic
// stopped.
func (a *streamSet) read(ctx context.Context, key streamKey, from, n int64,
	open func() (*derive.Stream, bool, error)) (_ *changelog.Changes, ok bool, _ error) {
	for {
		c, ok, gone, err := a.readOnce(ctx, key, from, n, open)
		if !gone {
			return c, ok, err
		}
		// The slot this read queued behind failed or was closed
		// meanwhile: take another.
	}
}

// readOnce is one try of read; gone says the slot it took was closed
// before its turn came.
func (a *streamSet) readOnce(ctx context.Context, key streamKey, from, n int64,
	open func() (*derive.Stream, bool, error)) (_ *changelog.Changes, ok, gone bool, _ error) {
	slot, drop, ok := a.take(key, from, n)
	for _, d := range drop {
		d.close()
	}
	if !ok {
		return nil, false, false, nil
	}
	slot.mu.Lock()
	defer slot.mu.Unlock()
	switch {
	case slot.notAppend.Load():
		return nil, false, false, nil
	case slot.closed:
		return nil, false, true, nil
	case slot.s == nil:
		s, isAppend, err := open()
		if err != nil {
			a.fail(slot)
			return nil, false, false, err
		}
		if !isAppend {
			slot.notAppend.Store(true)
			return nil, false, false, nil
		}
		slot.s = s
	}
	c, err := slot.s.Read(ctx, from, n)
	if err != nil {
		a.fail(slot)
		return nil, false, false, err
	}
	return c, true, false, nil
}

// take picks the slot to read [from, from+n) with and moves it to where
// that leaves it; it returns the slots to close (evicted or idle). ok is
// false when the key is known not to be a streamed append, or the set is
// closed.
func (a *streamSet) take(key streamKey, from, n int64) (slot *streamSlot, drop []*streamSlot, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return nil, nil, false
	}
	now := time.Now()
	kept := a.slots[:0]
	for _, s := range a.slots {
		switch {
		case s.key == key && s.next == from && slot == nil:
			slot = s
		case now.Sub(s.lastUsed) > streamIdle:
			drop = append(drop, s)
			continue
		}
		kept = append(kept, s)
	}
	a.slots = kept
	if slot == nil {
		for _, s := range a.slots {
			if s.key == key && s.notAppend.Load() {
				return nil, drop, false
			}
		}
		if len(a.slots) >= maxStreams {
			drop = append(drop, a.slots[0])
			a.slots = a.slots[1:]
		}
		slot = &streamSlot{key: key}
	} else {
		a.remove(slot)
	}
	slot.next, slot.lastUsed = from+n, now
	a.slots = append(a.slots, slot)
	return slot, drop, true
}

func (a *streamSet) remove(slot *streamSlot) {
	for i, s := range a.slots {
		if s == slot {
			a.slots = append(a.slots[:i], a.slots[i+1:]...)
			return
		}
	}
}

// fail drops a slot whose stream failed (the caller holds its mu): the
// next read opens a new one, and meets the fault again if it stays.
func (a *streamSet) fail(slot *streamSlot) {
	a.mu.Lock()
	a.remove(slot)
	a.mu.Unlock()
	slot.closeLocked()
}

// closeKey closes the streams of a segment no fetch can locate any more.
func (a *streamSet) closeKey(key streamKey) {
	a.closeWhere(func(s *streamSlot) bool { return s.key == key })
}

// closeIdle closes the streams no read used for streamIdle: a consumer
// that stopped half-way must not keep its stream's file and batch.
func (a *streamSet) closeIdle(now time.Time) {
	a.closeWhere(func(s *streamSlot) bool { return now.Sub(s.lastUsed) > streamIdle })
}

// closeWhere closes the streams drop selects.
func (a *streamSet) closeWhere(drop func(*streamSlot) bool) {
	a.mu.Lock()
	var closing []*streamSlot
	kept := a.slots[:0]
	for _, s := range a.slots {
		if drop(s) {
			closing = append(closing, s)
			continue
		}
		kept = append(kept, s)
	}
	a.slots = kept
	a.mu.Unlock()
	for _, s := range closing {
		s.close()
	}
}

// closeAll closes every stream; reads after it derive whole.
func (a *streamSet) closeAll() {
	a.mu.Lock()
	slots := a.slots
	a.slots, a.closed = nil, true
	a.mu.Unlock()
	for _, s := range slots {
		s.close()
	}
}

// close waits for the slot's read under way and closes its stream.
func (s *streamSlot) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closeLocked()
}

func (s *streamSlot) closeLocked() {
	if s.s != nil {
		s.s.Close()
		s.s = nil
	}
	s.closed = true
}
