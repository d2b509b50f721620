package derive

import (
	"hash/maphash"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
)

// firstColumnFilter is a cheap pre-check of the row diff. An added row can
// only cancel a removed row with the same content, so one whose first
// column's value no removed row has cannot cancel anything: it is an
// insert, without encoding it as JSON to look it up. Most rows a snapshot
// adds are new keys, and that encoding was a tenth of a cold read.
//
// Values are compared by a hash of the first column of every batch; when a
// batch's first column has another Arrow type than the first batch's, or a
// type it does not hash, the filter turns itself off for the rest of the
// diff, and every row goes through the full comparison as before.
type firstColumnFilter struct {
	typ  arrow.DataType
	off  bool
	seed maphash.Seed
	seen map[uint64]struct{}
}

func newFirstColumnFilter() firstColumnFilter {
	return firstColumnFilter{seed: maphash.MakeSeed(), seen: map[uint64]struct{}{}}
}

// hash returns the hash of row's first-column value; ok is false when the
// filter is off.
func (f *firstColumnFilter) hash(b arrow.RecordBatch, row int) (h uint64, ok bool) {
	if f.off {
		return 0, false
	}
	if b.NumCols() == 0 {
		f.off = true
		return 0, false
	}
	col := b.Column(0)
	if f.typ == nil {
		f.typ = col.DataType()
	} else if !arrow.TypeEqual(f.typ, col.DataType()) {
		f.off = true
		return 0, false
	}
	if col.IsNull(row) {
		return 0x9e3779b97f4a7c15, true
	}
	switch a := col.(type) {
	case *array.Int64:
		return mix64(uint64(a.Value(row))), true
	case *array.Int32:
		return mix64(uint64(int64(a.Value(row)))), true
	case *array.String:
		return maphash.String(f.seed, a.Value(row)), true
	}
	f.off = true
	return 0, false
}

// removed notes a removed row.
func (f *firstColumnFilter) removed(b arrow.RecordBatch, row int) {
	if h, ok := f.hash(b, row); ok {
		f.seen[h] = struct{}{}
	}
}

// cannotCancel reports whether an added row surely matches no removed row.
func (f *firstColumnFilter) cannotCancel(b arrow.RecordBatch, row int) bool {
	h, ok := f.hash(b, row)
	if !ok {
		return false
	}
	_, maybe := f.seen[h]
	return !maybe
}

// mix64 is SplitMix64's finalizer: integer keys that differ in a few low
// bits land far apart.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}
