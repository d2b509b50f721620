package derive

import (
	"bytes"
	"fmt"
	"hash/maphash"

	"github.com/apache/arrow-go/v18/arrow"

	"github.com/lakegw/lakegw/changelog"
)

// rowDiff computes the multiset difference between the rows a snapshot
// removed (the before-images of the files it touched) and the rows it added
// (their after-images). Rows present on both sides with the same content are
// carry-over (a copy-on-write rewrite, or rows deleted and re-inserted
// unchanged) and cancel out, first with first, so that only real changes
// become events. Matching is by full row JSON, verified byte for byte after
// a hash hit.
type rowDiff struct {
	batches []arrow.RecordBatch
	rows    []func(dst []byte, row int) []byte

	seed    maphash.Seed
	befores []beforeRow
	pending map[uint64][]int32
	inserts []changelog.RowRef
	first   firstColumnFilter

	buf, buf2 []byte
}

type beforeRow struct {
	ref     changelog.RowRef
	matched bool
}

func newRowDiff() *rowDiff {
	return &rowDiff{seed: maphash.MakeSeed(), pending: map[uint64][]int32{}, first: newFirstColumnFilter()}
}

func (d *rowDiff) addBatch(b arrow.RecordBatch) (int32, error) {
	fn, err := changelog.RowAppender(b)
	if err != nil {
		return 0, err
	}
	d.batches = append(d.batches, b)
	d.rows = append(d.rows, fn)
	return int32(len(d.batches) - 1), nil
}

func (d *rowDiff) encode(dst []byte, ref changelog.RowRef) []byte {
	return d.rows[ref.Batch](dst, int(ref.Row))
}

// addBefore records the rows of a batch as removed; the diff takes
// ownership of the batch.
func (d *rowDiff) addBefore(b arrow.RecordBatch) error {
	return d.addBeforeRows(b, nil)
}

// addBeforeRows records the given rows of a batch (all of them when rows
// is nil) as removed; the diff takes ownership of the batch.
func (d *rowDiff) addBeforeRows(b arrow.RecordBatch, rows []int32) error {
	bi, err := d.addBatch(b)
	if err != nil {
		b.Release()
		return err
	}
	if rows == nil {
		rows = make([]int32, b.NumRows())
		for i := range rows {
			rows[i] = int32(i)
		}
	}
	for _, r := range rows {
		d.first.removed(b, int(r))
		ref := changelog.RowRef{Batch: bi, Row: r}
		d.buf = d.encode(d.buf[:0], ref)
		h := maphash.Bytes(d.seed, d.buf)
		d.pending[h] = append(d.pending[h], int32(len(d.befores)))
		d.befores = append(d.befores, beforeRow{ref: ref})
	}
	return nil
}

// addAfter records the rows of a batch as added, cancelling each against
// the first pending removed row with the same content; the diff takes
// ownership of the batch.
func (d *rowDiff) addAfter(b arrow.RecordBatch) error {
	bi, err := d.addBatch(b)
	if err != nil {
		b.Release()
		return err
	}
	for r := range int32(b.NumRows()) {
		ref := changelog.RowRef{Batch: bi, Row: r}
		if d.first.cannotCancel(b, int(r)) {
			d.inserts = append(d.inserts, ref)
			continue
		}
		d.buf = d.encode(d.buf[:0], ref)
		h := maphash.Bytes(d.seed, d.buf)
		if d.cancel(h) {
			continue
		}
		d.inserts = append(d.inserts, ref)
	}
	return nil
}

// cancel marks the first pending removed row equal to d.buf as matched.
func (d *rowDiff) cancel(h uint64) bool {
	queue := d.pending[h]
	for i, idx := range queue {
		d.buf2 = d.encode(d.buf2[:0], d.befores[idx].ref)
		if !bytes.Equal(d.buf, d.buf2) {
			continue // a hash collision between different rows
		}
		d.befores[idx].matched = true
		if len(queue) == 1 {
			delete(d.pending, h)
		} else {
			d.pending[h] = append(queue[:i:i], queue[i+1:]...)
		}
		return true
	}
	return false
}

// deletes returns the removed rows that no added row cancelled, in order.
func (d *rowDiff) deletes() []changelog.RowRef {
	var out []changelog.RowRef
	for _, b := range d.befores {
		if !b.matched {
			out = append(out, b.ref)
		}
	}
	return out
}

func (d *rowDiff) release() {
	releaseAll(d.batches)
	d.batches = nil
}

// String describes the diff's size, for logs.
func (d *rowDiff) String() string {
	return fmt.Sprintf("%d batches, %d removed rows, %d added rows", len(d.batches), len(d.befores), len(d.inserts))
}
