package derive

import (
	"hash/maphash"
	"sync"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
)

// checkedKey identifies the bytes of a file that decoded without fault:
// where it is read from (a 128-bit hash of its location), its size and row
// count and, for a deletion vector, the blob within it. The key holds no
// pointer: the set is the size of a long-running gateway's recent files,
// and a string per entry was memory the collector traced on every cycle.
type checkedKey struct {
	location    locationHash
	size, count int64
	blobOffset  int64
}

// locationHash is a location hashed with two independent seeds; a false
// match of two locations needs both 64-bit hashes to collide.
type locationHash [2]uint64

var locationSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

func hashLocation(location string) locationHash {
	return locationHash{maphash.String(locationSeeds[0], location), maphash.String(locationSeeds[1], location)}
}

// locator is an IO that reads names from elsewhere (lake's remaps): two
// copies of a table record the same names for files in different places.
type locator interface{ Location(name string) string }

// locationOf is where fs reads name from.
func locationOf(fs icebergio.IO, name string) string {
	if l, ok := fs.(locator); ok {
		return l.Location(name)
	}
	return name
}

func checkedKeyOf(fs icebergio.IO, f iceberg.DataFile) checkedKey {
	k := checkedKey{location: hashLocation(locationOf(fs, f.FilePath())), size: f.FileSizeBytes(), count: f.Count(), blobOffset: -1}
	if off := f.ContentOffset(); off != nil {
		k.blobOffset = *off
	}
	return k
}

// maxCheckedFiles bounds the set of checked files (some 100 bytes each):
// beyond it the least recently looked-up are forgotten and checked again
// when read again.
const maxCheckedFiles = 1 << 16

// checkedSet is a bounded set of checked files, safe for concurrent use.
// It holds no pointer at all (a map of pointer-free keys and values, and a
// ring of keys): the set fills over a long-running gateway's first hour,
// and the linked entries of an LRU list were 130,000 pointers the collector
// traced on every cycle. Eviction is CLOCK: a key looked up since the hand
// last passed it gets a second chance.
type checkedSet struct {
	mu sync.Mutex
	// at maps a key to its slot in ring.
	at   map[checkedKey]int32
	ring []checkedSlot
	hand int
}

type checkedSlot struct {
	key  checkedKey
	used bool // the slot holds a key
	seen bool // looked up since the hand last passed
}

var filesChecked = newCheckedSet(maxCheckedFiles)

func newCheckedSet(capacity int) *checkedSet {
	return &checkedSet{at: make(map[checkedKey]int32, capacity), ring: make([]checkedSlot, capacity)}
}

func (s *checkedSet) has(k checkedKey) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	i, ok := s.at[k]
	if ok {
		s.ring[i].seen = true
	}
	return ok
}

func (s *checkedSet) add(k checkedKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.at[k]; ok {
		return
	}
	for {
		slot := &s.ring[s.hand]
		if !slot.used || !slot.seen {
			if slot.used {
				delete(s.at, slot.key)
			}
			*slot = checkedSlot{key: k, used: true}
			s.at[k] = int32(s.hand)
			s.hand = (s.hand + 1) % len(s.ring)
			return
		}
		slot.seen = false
		s.hand = (s.hand + 1) % len(s.ring)
	}
}

// forget drops every key: tests damage a file after it was checked.
func (s *checkedSet) forget() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.at)
	clear(s.ring)
	s.hand = 0
}
