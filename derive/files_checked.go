package derive

import (
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	lru "github.com/hashicorp/golang-lru/v2"
)

// checkedKey identifies the bytes of a file that decoded without fault:
// where it is read from, its size and row count and, for a deletion
// vector, the blob within it.
type checkedKey struct {
	location    string
	size, count int64
	blobOffset  int64
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
	k := checkedKey{location: locationOf(fs, f.FilePath()), size: f.FileSizeBytes(), count: f.Count(), blobOffset: -1}
	if off := f.ContentOffset(); off != nil {
		k.blobOffset = *off
	}
	return k
}

// maxCheckedFiles bounds the set of checked files (some 150 bytes each):
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
