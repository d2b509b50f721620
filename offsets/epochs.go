package offsets

import (
	"fmt"
	"math"
)

// Leader epochs, and why every snapshot has its own.
//
// Kafka clients detect a rewritten log through leader epochs: each record
// batch carries the epoch it was written under, and a client validates its
// position with OffsetForLeaderEpoch(the epoch of the last record it
// consumed), which answers where that epoch ended. A client whose position
// is past that end was reading records that are gone: it truncates there
// and reads on. A client learns that it must validate when its fetch is
// fenced (its current leader epoch is older than the broker's).
//
// Expiry rewrites only the start of the log: the history before the
// earliest retained snapshot becomes a compacted prefix of its live rows,
// ending where that snapshot's records ended. Records after it keep their
// offsets and their meaning. Were the whole log one epoch, a consumer
// following the head would be told its epoch ended at the prefix and
// would read the whole table again at every expiry (every maintenance
// pass of a streaming table). So each snapshot's segments carry an epoch
// of their own, spaced epochStride apart, and a prefix takes an epoch in
// the gap after the last snapshot it replaces: a consumer whose last
// record was replaced is told its epoch ended at the prefix's base and
// reads the prefix; one whose last record is still served is told its
// epoch ends past its position and reads on.
//
// Epochs are epochStride·(sequence number) where that rises above the
// current epoch, so a lakegw LSM table, whose offsets every gateway
// rebuilds from the table alone, gets the same epochs everywhere. The
// numbers in between are for rewrites: a prefix (stride·seq+1) and a new
// leader epoch that fences clients after one.

// epochStride spaces the epochs of consecutive snapshots: room for a
// prefix and two more rewrites before the next commit. It bounds a table
// to 2^31/4 (about 537 million) sequence numbers before epochs stop
// rising per snapshot; past that they stay equal, and an expiry makes
// every consumer read the prefix again, as before epochs were per snapshot.
// (A raw topic, whose log start is never rewritten, keeps one epoch for
// all its snapshots instead: see OpenGrowing.)
const epochStride = 4

// clampEpoch is e as a leader epoch, or the largest one.
func clampEpoch(e int64) int32 { return int32(min(max(e, 0), math.MaxInt32)) }

// segmentEpoch is the epoch of the segments of a snapshot with sequence
// number seq appended after epoch leader: the table's own when it is
// higher, else leader itself (an index rebuilt under a fresh epoch, a v1
// table whose positions move after an expiry: its segments then share an
// epoch, and an expiry within them truncates every consumer).
func segmentEpoch(kind SegmentKind, seq int64, leader int32) int32 {
	own := clampEpoch(epochStride * seq)
	if kind == KindCompactedPrefix {
		own = PrefixEpoch(seq)
	}
	return max(own, leader)
}

// PrefixEpoch is the epoch of a compacted prefix standing for the snapshot
// with sequence number seq: just above that snapshot's own and below the
// next one's, the same on every gateway.
func PrefixEpoch(seq int64) int32 { return clampEpoch(epochStride*seq + 1) }

// FreshEpoch bounds every epoch an index of a table whose last sequence
// number is lastSeq can have used (barring more than epochStride-1
// rewrites between two commits): an index rebuilt without its state
// starts above it, so no consumer's epoch means other offsets there.
func FreshEpoch(lastSeq int64) int32 { return clampEpoch(epochStride*lastSeq + epochStride - 1) }

// nextEpoch is the epoch after e, for a rewrite.
func nextEpoch(topic string, e int32) (int32, error) {
	if e == math.MaxInt32 {
		return 0, fmt.Errorf("topic %s: leader epochs exhausted", topic)
	}
	return e + 1, nil
}

// topEpoch is the newest epoch of the topic: of its epoch list (the
// rewrites) and of its newest segments.
func topEpoch(st TopicState, parts [][]Segment) int32 {
	m := maxEpoch(st.Epochs)
	for _, segs := range parts {
		if n := len(segs); n > 0 {
			m = max(m, segs[n-1].Epoch)
		}
	}
	return m
}

// raiseToMonotonic makes the segment epochs of one partition rise with
// the offset. Indexes written before epochs were per snapshot kept the
// older epoch of the segments after a prefix; they were served under the
// topic's epoch, which was at least the prefix's.
func raiseToMonotonic(segs []Segment) {
	for i := 1; i < len(segs); i++ {
		segs[i].Epoch = max(segs[i].Epoch, segs[i-1].Epoch)
	}
}
