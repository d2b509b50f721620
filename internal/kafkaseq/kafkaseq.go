package kafkaseq

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"math"
)

// Follows says whether a batch starting at first follows one ending at
// last.
func Follows(last, first int32) bool {
	return first == last+1 || (last == math.MaxInt32 && first == 0)
}

// Behind says whether a batch starting at first lies before the one
// expected after last: within the 2^30 sequence numbers below it (a batch
// further away is a gap ahead).
func Behind(last, first int32) bool {
	const space = int64(1) << 31
	expected := (int64(last) + 1) % space
	d := ((expected-int64(first))%space + space) % space
	return d > 0 && d <= space/2
}

// Before is the sequence number preceding seq.
func Before(seq int32) int32 {
	if seq == 0 {
		return math.MaxInt32
	}
	return seq - 1
}

// Last is the sequence number of the last of n records starting at first.
func Last(first int32, n int) int32 {
	return int32((int64(first) + int64(n) - 1) % (1 << 31))
}

// NewProducerID is a random 63-bit producer id: unique across restarts and
// gateways without a shared counter (idempotent and transactional
// producers alike).
func NewProducerID() (int64, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return 0, fmt.Errorf("producer id: %w", err)
	}
	return int64(binary.BigEndian.Uint64(b[:]) >> 1), nil
}
