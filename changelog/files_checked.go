package changelog

import (
	"sync"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
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

func checkedKeyOf(fs icebergio.IO, f iceberg.DataFile) checkedKey {
	loc := f.FilePath()
	if l, ok := fs.(locator); ok {
		loc = l.Location(loc)
	}
	k := checkedKey{location: loc, size: f.FileSizeBytes(), count: f.Count(), blobOffset: -1}
	if off := f.ContentOffset(); off != nil {
		k.blobOffset = *off
	}
	return k
}

// maxCheckedFiles bounds the set of checked files (some 150 bytes each):
// beyond it the oldest are forgotten and checked again when read again.
const maxCheckedFiles = 1 << 16

// checkedSet is a bounded set of checked files, oldest forgotten first.
// Safe for concurrent use.
type checkedSet struct {
	mu    sync.Mutex
	keys  map[checkedKey]struct{}
	order []checkedKey // a ring of the keys, next slot at next
	next  int
}

// filesChecked holds the files of every table this process derived from:
// a path names the same bytes in every table that refers to it.
var filesChecked = &checkedSet{keys: map[checkedKey]struct{}{}}

func (s *checkedSet) has(k checkedKey) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.keys[k]
	return ok
}

func (s *checkedSet) add(k checkedKey) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.keys[k]; ok {
		return
	}
	if len(s.order) < maxCheckedFiles {
		s.order = append(s.order, k)
	} else {
		delete(s.keys, s.order[s.next])
		s.order[s.next] = k
		s.next = (s.next + 1) % maxCheckedFiles
	}
	s.keys[k] = struct{}{}
}

// forget drops every key: tests damage a file after it was checked.
func (s *checkedSet) forget() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.keys, s.order, s.next = map[checkedKey]struct{}{}, nil, 0
}
