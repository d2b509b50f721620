package produce

import (
	"encoding/json"
	"fmt"
	"sort"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/internal/kafkaseq"
)

// Idempotent producers, as Kafka's brokers check them: per producer id
// and partition, a batch must continue the sequence of the previous one
// under the same epoch (or start a newer epoch at 0); a retry of one of
// the last batchesKept batches is answered with its first commit's
// offset and not written again; an older epoch is fenced. A producer this
// gateway knows nothing of (new, or its state expired with the snapshots
// that carried it) may start anywhere, as with Kafka.
//
// The state of every producer a commit writes for, and of every other
// producer seen in the last carryWindow, is carried in that commit's
// snapshot summary (SummaryProducers), so it is exactly as durable as the
// records and the newest snapshot holds all of it: a gateway restarted
// after a kill -9 reads it back (restore) and still recognises a batch
// retried across the restart, however few snapshots the table keeps.
const (
	// SummaryProducers is the snapshot summary key holding the state of
	// the producers the snapshot's records came from.
	SummaryProducers = "lakegw.producers"
	// batchesKept is how many of a producer's last batches per partition
	// are recognised as retries: Kafka's, matching the at most five
	// requests an idempotent producer has in flight.
	batchesKept = 5
	// maxProducers bounds the producers tracked per table; the least
	// recently seen is forgotten first (as Kafka's producer id expiry).
	maxProducers = 10000
	noSequence   = -1
)

// seqKey is one producer's partition.
type seqKey struct {
	pid       int64
	partition int32
}

// batchMeta is one recent batch of a producer: its sequence range and
// first offset, or the ticket it waits on while uncommitted.
type batchMeta struct {
	first, last int32
	offset      int64
	pending     *ticket
}

// seqEntry is a producer partition's state: as committed, and with the
// batches accepted since (pending).
type seqEntry struct {
	epoch, committedEpoch int16
	last, committedLast   int32
	recent                []batchMeta
	committed             bool // some commit holds a batch of it
	seen                  time.Time
}

// seqState is the producer state of one table. Guarded by its writer's
// mutex.
type seqState struct {
	m map[seqKey]*seqEntry
}

func newSeqState() *seqState { return &seqState{m: map[seqKey]*seqEntry{}} }

// accept checks b against its producer's state and, when it is new,
// records it as pending on t. A retry of a recent batch returns that
// batch (committed: its offset; pending: its ticket to wait on).
func (s *seqState) accept(b *Batch, t *ticket, now time.Time) (dup *batchMeta, err error) {
	if b.ProducerID < 0 {
		return nil, nil
	}
	k := seqKey{b.ProducerID, b.Partition}
	first, last := b.BaseSequence, b.lastSequence()
	e := s.m[k]
	switch {
	case e == nil:
		s.evictIfFull()
		e = &seqEntry{committedLast: noSequence, last: noSequence, epoch: b.ProducerEpoch, committedEpoch: b.ProducerEpoch}
		s.m[k] = e
	case b.ProducerEpoch < e.epoch:
		return nil, fmt.Errorf("%w: producer %d epoch %d, fenced by epoch %d", ErrInvalidProducerEpoch, b.ProducerID, b.ProducerEpoch, e.epoch)
	case b.ProducerEpoch > e.epoch:
		if first != 0 {
			return nil, fmt.Errorf("%w: producer %d starts epoch %d at sequence %d, not 0", ErrOutOfOrderSequence, b.ProducerID, b.ProducerEpoch, first)
		}
		e.epoch, e.last = b.ProducerEpoch, noSequence
		e.recent = e.recent[:0]
	default:
		for i := range e.recent {
			if m := &e.recent[i]; m.first == first && m.last == last {
				e.seen = now
				return m, nil
			}
		}
		if e.last != noSequence && !kafkaseq.Follows(e.last, first) {
			if kafkaseq.Behind(e.last, first) {
				return nil, fmt.Errorf("%w: producer %d partition %d sequence %d..%d was written before (last is %d)",
					ErrDuplicateSequence, b.ProducerID, b.Partition, first, last, e.last)
			}
			return nil, fmt.Errorf("%w: producer %d partition %d sent sequence %d after %d", ErrOutOfOrderSequence, b.ProducerID, b.Partition, first, e.last)
		}
	}
	e.seen = now
	e.last = last
	e.recent = append(e.recent, batchMeta{first: first, last: last, offset: -1, pending: t})
	if len(e.recent) > batchesKept {
		e.recent = append(e.recent[:0], e.recent[len(e.recent)-batchesKept:]...)
	}
	return nil, nil
}

// evictIfFull forgets the least recently seen producer without pending
// batches when the table tracks maxProducers.
func (s *seqState) evictIfFull() {
	if len(s.m) < maxProducers {
		return
	}
	var oldest seqKey
	var at time.Time
	found := false
	for k, e := range s.m {
		if e.hasPending() {
			continue
		}
		if !found || e.seen.Before(at) {
			oldest, at, found = k, e.seen, true
		}
	}
	if found {
		delete(s.m, oldest)
	}
}

func (e *seqEntry) hasPending() bool {
	for _, m := range e.recent {
		if m.pending != nil {
			return true
		}
	}
	return false
}

// after returns the state of the producer partitions group touches as
// it will be once a commit holds group at bases (each batch's first
// offset): what that commit's summary carries. It changes nothing.
func (s *seqState) after(group []*ticket, bases []int64, now time.Time) []summaryProducer {
	offsetOf := make(map[*ticket]int64, len(group))
	var keys []seqKey
	for i, t := range group {
		offsetOf[t] = bases[i]
		if b := t.batch; b.ProducerID >= 0 {
			keys = append(keys, seqKey{b.ProducerID, b.Partition})
		}
	}
	out := make([]summaryProducer, 0, len(keys))
	done := make(map[seqKey]bool, len(keys))
	for _, k := range keys {
		e := s.m[k]
		if done[k] || e == nil {
			continue
		}
		done[k] = true
		sp := summaryProducer{PID: k.pid, Partition: k.partition, Epoch: e.epoch}
		for _, m := range e.recent {
			off := m.offset
			if m.pending != nil {
				o, ours := offsetOf[m.pending]
				if !ours {
					break // a later group's: not in this commit
				}
				off = o
			}
			sp.Batches = append(sp.Batches, [3]int64{int64(m.first), int64(m.last), off})
		}
		if len(sp.Batches) > 0 {
			out = append(out, sp)
		}
	}
	// Every other producer seen lately rides along too, so the newest
	// snapshot alone holds the state a restart needs, whatever the
	// snapshot retention: its committed batches only.
	var others []seqKey
	for k, e := range s.m {
		if !done[k] && e.committed && now.Sub(e.seen) <= carryWindow {
			others = append(others, k)
		}
	}
	sort.Slice(others, func(i, j int) bool { return s.m[others[i]].seen.After(s.m[others[j]].seen) })
	for _, k := range others[:min(len(others), maxCarried)] {
		e := s.m[k]
		sp := summaryProducer{PID: k.pid, Partition: k.partition, Epoch: e.committedEpoch}
		for _, m := range e.recent {
			if m.pending == nil {
				sp.Batches = append(sp.Batches, [3]int64{int64(m.first), int64(m.last), m.offset})
			}
		}
		if len(sp.Batches) > 0 {
			out = append(out, sp)
		}
	}
	return out
}

// carryWindow is how long a producer's state rides along in every commit
// after it last wrote: Kafka's default delivery.timeout.ms, the longest a
// producer retries a batch. maxCarried bounds how many ride along (the most
// recently seen), and so the summary's size.
const (
	carryWindow = 2 * time.Minute
	maxCarried  = 2000
)

// committed records that a commit holds group (each ticket's
// res.BaseOffset set): its batches are retries' answers from now on.
func (s *seqState) committed(group []*ticket) {
	for _, t := range group {
		b := t.batch
		if b.ProducerID < 0 {
			continue
		}
		e := s.m[seqKey{b.ProducerID, b.Partition}]
		if e == nil {
			continue
		}
		for i := range e.recent {
			if m := &e.recent[i]; m.pending == t {
				m.pending, m.offset = nil, t.res.BaseOffset
				e.committedEpoch, e.committedLast = e.epoch, m.last
			}
		}
		e.committed = true
	}
}

// failed forgets every pending batch: a failed commit fails every batch
// waiting on the table, so each producer is back at its committed state
// and its retries are accepted in order. A producer none of whose batches
// was ever committed is kept, expecting the first failed batch again: a
// later batch of its must not pass as a new producer's start while the
// failed ones are retried.
func (s *seqState) failed() {
	for _, e := range s.m {
		firstFailed, any := int32(0), false
		kept := e.recent[:0]
		for _, m := range e.recent {
			if m.pending == nil {
				kept = append(kept, m)
			} else if !any {
				firstFailed, any = m.first, true
			}
		}
		e.recent = kept
		switch {
		case e.committed:
			e.epoch, e.last = e.committedEpoch, e.committedLast
		case any:
			e.last = kafkaseq.Before(firstFailed)
		}
	}
}

// hole records that b was refused before its sequence was checked (no
// memory for it): a producer this table has no state of expects b's first
// sequence next, so its later batches cannot pass as a new start.
func (s *seqState) hole(b *Batch) {
	if b.ProducerID < 0 {
		return
	}
	k := seqKey{b.ProducerID, b.Partition}
	if _, ok := s.m[k]; ok {
		return // its state already orders the retry
	}
	s.evictIfFull()
	s.m[k] = &seqEntry{epoch: b.ProducerEpoch, committedEpoch: b.ProducerEpoch, last: kafkaseq.Before(b.BaseSequence), committedLast: noSequence}
}

// summaryProducer is one producer partition's state in a snapshot summary.
type summaryProducer struct {
	PID       int64 `json:"id"`
	Partition int32 `json:"p"`
	Epoch     int16 `json:"e"`
	// Batches are the last batches: first sequence, last sequence, first
	// offset.
	Batches [][3]int64 `json:"b"`
}

func encodeProducers(ps []summaryProducer) (string, error) {
	b, err := json.Marshal(ps)
	if err != nil {
		return "", fmt.Errorf("encode producer state: %w", err)
	}
	return string(b), nil
}

// restore rebuilds the state from the summaries of tbl's retained
// snapshots, newest first: the newest state of each producer partition
// wins.
func restore(tbl *table.Table) (*seqState, error) {
	s := newSeqState()
	meta := tbl.Metadata()
	seen := 0
	for snap := tbl.CurrentSnapshot(); snap != nil; {
		if seen++; seen > len(meta.Snapshots()) {
			return nil, fmt.Errorf("snapshot %d: the table's ancestry loops", snap.SnapshotID)
		}
		if snap.Summary != nil {
			if v, ok := snap.Summary.Properties[SummaryProducers]; ok {
				var ps []summaryProducer
				if err := json.Unmarshal([]byte(v), &ps); err != nil {
					return nil, fmt.Errorf("snapshot %d: %s: %w", snap.SnapshotID, SummaryProducers, err)
				}
				for _, p := range ps {
					k := seqKey{p.PID, p.Partition}
					if _, have := s.m[k]; have || len(s.m) >= maxProducers || len(p.Batches) == 0 {
						continue
					}
					e := &seqEntry{epoch: p.Epoch, committedEpoch: p.Epoch, committed: true}
					for _, b := range p.Batches {
						e.recent = append(e.recent, batchMeta{first: int32(b[0]), last: int32(b[1]), offset: b[2]})
					}
					e.last = e.recent[len(e.recent)-1].last
					e.committedLast = e.last
					s.m[k] = e
				}
			}
		}
		if snap.ParentSnapshotID == nil {
			break
		}
		snap = meta.SnapshotByID(*snap.ParentSnapshotID)
	}
	return s, nil
}
