package derive

import (
	"hash/maphash"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	lru "github.com/hashicorp/golang-lru/v2"
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

// maxCheckedFiles bounds the set of checked files (some 150 bytes each,
// none of them pointers but the LRU's own links):
// beyond it the oldest are forgotten and checked again when read again.
const maxCheckedFiles = 1 << 16

// checkedSet is a bounded set of checked files, least recently used
// forgotten first (golang-lru, safe for concurrent use).
type checkedSet struct {
	lru *lru.Cache[checkedKey, struct{}]
}

var filesChecked = newCheckedSet()

func newCheckedSet() *checkedSet {
	c, err := lru.New[checkedKey, struct{}](maxCheckedFiles)
	if err != nil {
		panic(err) // only for a size <= 0, a constant here
	}
	return &checkedSet{lru: c}
}

func (s *checkedSet) has(k checkedKey) bool { return s.lru.Contains(k) }

func (s *checkedSet) add(k checkedKey) { s.lru.Add(k, struct{}{}) }

// forget drops every key: tests damage a file after it was checked.
func (s *checkedSet) forget() { s.lru.Purge() }
