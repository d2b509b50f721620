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
// become events. Matching is by a row's form, verified byte for byte after
// a hash hit: its binary form (binaryRowForm) while every batch has the
// same columns of covered types, else its JSON, what a consumer compares.
type rowDiff struct {
	batches []arrow.RecordBatch
	json    []rowForm // each batch's row JSON
	forms   []rowForm // each batch's binary row form, while binary
	binary  bool

	seed    maphash.Seed
	befores []beforeRow
	pending map[uint64]pendingRows
	inserts []changelog.RowRef
	first   firstColumnFilter

	buf, buf2 []byte
}

type beforeRow struct {
	ref     changelog.RowRef
	matched bool
	next    int32 // the next pending removed row of the same hash, or -1
}

// pendingRows is a queue of the removed rows of one hash that no added row
// has cancelled yet, chained through beforeRow.next: a map of slices
// allocated one per row.
type pendingRows struct{ head, tail int32 }

// pend queues removed row i under hash h.
func (d *rowDiff) pend(h uint64, i int32) {
	d.befores[i].next = -1
	q, ok := d.pending[h]
	if !ok {
		d.pending[h] = pendingRows{i, i}
		return
	}
	d.befores[q.tail].next = i
	q.tail = i
	d.pending[h] = q
}

func newRowDiff() *rowDiff {
	return &rowDiff{seed: maphash.MakeSeed(), pending: map[uint64]pendingRows{}, first: newFirstColumnFilter(), binary: true}
}

func (d *rowDiff) addBatch(b arrow.RecordBatch) (int32, error) {
	fn, err := changelog.RowAppender(b)
	if err != nil {
		return 0, err
	}
	d.batches = append(d.batches, b)
	d.json = append(d.json, fn)
	if d.binary {
		form, ok := binaryRowForm(b)
		if ok && sameColumns(d.batches[0].Schema(), b.Schema()) {
			d.forms = append(d.forms, form)
		} else {
			d.compareJSON()
		}
	}
	return int32(len(d.batches) - 1), nil
}

// encode appends a row's JSON.
func (d *rowDiff) encode(dst []byte, ref changelog.RowRef) []byte {
	return d.json[ref.Batch](dst, int(ref.Row))
}

// form appends the form rows are compared by.
func (d *rowDiff) form(dst []byte, ref changelog.RowRef) []byte {
	if d.binary {
		return d.forms[ref.Batch](dst, int(ref.Row))
	}
	return d.json[ref.Batch](dst, int(ref.Row))
}

// compareJSON turns to comparing rows by JSON, for a batch whose binary
// form would not stand for its JSON against the others': the removed rows
// still pending are hashed again, in order, so that the first still
// cancels first.
func (d *rowDiff) compareJSON() {
	d.binary = false
	d.forms = nil
	clear(d.pending)
	for i, b := range d.befores {
		if b.matched {
			continue
		}
		d.buf = d.encode(d.buf[:0], b.ref)
		d.pend(maphash.Bytes(d.seed, d.buf), int32(i))
	}
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
		d.buf = d.form(d.buf[:0], ref)
		d.befores = append(d.befores, beforeRow{ref: ref})
		d.pend(maphash.Bytes(d.seed, d.buf), int32(len(d.befores)-1))
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
		d.buf = d.form(d.buf[:0], ref)
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
	q, ok := d.pending[h]
	if !ok {
		return false
	}
	prev := int32(-1)
	for i := q.head; i != -1; prev, i = i, d.befores[i].next {
		d.buf2 = d.form(d.buf2[:0], d.befores[i].ref)
		if !bytes.Equal(d.buf, d.buf2) {
			continue // a hash collision between different rows
		}
		d.befores[i].matched = true
		next := d.befores[i].next
		if prev == -1 {
			q.head = next
		} else {
			d.befores[prev].next = next
		}
		if q.tail == i {
			q.tail = prev
		}
		if q.head == -1 {
			delete(d.pending, h)
		} else {
			d.pending[h] = q
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
