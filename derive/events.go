package derive

import (
	"context"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"

	"github.com/lakegw/lakegw/changelog"
)

// buildRecords turns the removed and added rows of a snapshot into events.
// With key fields, a removed and an added row with equal key values become
// one update (first with first). Order: the deletes that stayed deletes,
// then inserts and updates in the order of the added rows; placing an update
// at its after-image keeps every key's events in a valid order even when a
// key has several removed rows.
func buildRecords(batches []arrow.RecordBatch, deletes, inserts []changelog.RowRef, c *changelog.Changes) ([]changelog.Record, error) {
	recs := make([]changelog.Record, 0, len(deletes)+len(inserts))
	pairedBefore := make([]changelog.RowRef, len(inserts))
	for i := range pairedBefore {
		pairedBefore[i] = changelog.NoRow
	}
	deleted := make([]bool, len(deletes))
	if len(c.KeyFieldIDs) > 0 && len(deletes) > 0 && len(inserts) > 0 {
		if ints := intKeyColumns(batches, c); ints != nil {
			// One integer key column (the common "id BIGINT"): pair by
			// value, without writing keys as JSON.
			ids := make(map[int64]int32, len(deletes))
			value := func(ref changelog.RowRef) int64 { return ints[ref.Batch].Value(int(ref.Row)) }
			pairByKey(deletes, inserts, pairedBefore, deleted, func(ref changelog.RowRef) int32 {
				v := value(ref)
				id, ok := ids[v]
				if !ok {
					id = int32(len(ids))
					ids[v] = id
				}
				return id
			}, func(ref changelog.RowRef) (int32, bool) {
				id, ok := ids[value(ref)]
				return id, ok
			})
		} else {
			keys := make([]func(dst []byte, row int) []byte, len(batches))
			for i, b := range batches {
				fn, err := changelog.KeyAppender(c.Schema, b, c.KeyFieldIDs)
				if err != nil {
					return nil, fmt.Errorf("key of batch %d: %w", i, err)
				}
				keys[i] = fn
			}
			var buf []byte
			ids := make(map[string]int32, len(deletes))
			pairByKey(deletes, inserts, pairedBefore, deleted, func(ref changelog.RowRef) int32 {
				buf = keys[ref.Batch](buf[:0], int(ref.Row))
				id, ok := ids[string(buf)]
				if !ok {
					id = int32(len(ids))
					ids[string(buf)] = id
				}
				return id
			}, func(ref changelog.RowRef) (int32, bool) {
				buf = keys[ref.Batch](buf[:0], int(ref.Row))
				id, ok := ids[string(buf)]
				return id, ok
			})
		}
	}
	for i, ref := range deletes {
		if !deleted[i] {
			recs = append(recs, changelog.Record{Op: changelog.OpDelete, Before: ref, After: changelog.NoRow})
		}
	}
	for i, ref := range inserts {
		if pairedBefore[i].Valid() {
			recs = append(recs, changelog.Record{Op: changelog.OpUpdate, Before: pairedBefore[i], After: ref})
		} else {
			recs = append(recs, changelog.Record{Op: changelog.OpInsert, Before: changelog.NoRow, After: ref})
		}
	}
	return recs, nil
}

// pairByKey pairs removed and added rows of one key, first with first,
// setting pairedBefore (per insert) and deleted (per delete). intern gives
// a delete's key an id (0, 1, 2... in order of first sight); lookup finds
// an insert's. A key's id indexes head, its first unpaired delete, and next
// chains the later ones: one delete per key, the common case, costs one
// map entry and no slice, and pairing never writes the map.
func pairByKey(deletes, inserts, pairedBefore []changelog.RowRef, deleted []bool,
	intern func(changelog.RowRef) int32, lookup func(changelog.RowRef) (int32, bool)) {
	head := make([]int32, 0, len(deletes))
	next := make([]int32, len(deletes))
	for i := len(deletes) - 1; i >= 0; i-- {
		id := intern(deletes[i])
		if int(id) == len(head) {
			head = append(head, -1)
		}
		next[i], head[id] = head[id], int32(i)
	}
	for i, ref := range inserts {
		id, ok := lookup(ref)
		if !ok || head[id] < 0 {
			continue
		}
		j := head[id]
		pairedBefore[i] = deletes[j]
		deleted[j] = true
		head[id] = next[j]
	}
}

// intKeyColumns returns every batch's key column when the key is a single
// top-level int64 column without nulls, else nil.
func intKeyColumns(batches []arrow.RecordBatch, c *changelog.Changes) []*array.Int64 {
	if len(c.KeyFieldIDs) != 1 {
		return nil
	}
	id := c.KeyFieldIDs[0]
	top := slices.IndexFunc(c.Schema.Fields(), func(f iceberg.NestedField) bool { return f.ID == id })
	if top < 0 {
		return nil
	}
	out := make([]*array.Int64, len(batches))
	for i, b := range batches {
		if top >= int(b.NumCols()) {
			return nil
		}
		col, ok := b.Column(top).(*array.Int64)
		if !ok || col.NullN() > 0 {
			return nil
		}
		out[i] = col
	}
	return out
}

// compactBatches drops the batches no record references, copies out the
// referenced rows of sparsely used batches (a before-image of a few rows
// must not pin a whole row group in memory), and renumbers the references.
func compactBatches(batches []arrow.RecordBatch, recs []changelog.Record) []arrow.RecordBatch {
	used := make([][]int32, len(batches))
	mark := func(ref changelog.RowRef) {
		if ref.Valid() {
			used[ref.Batch] = append(used[ref.Batch], ref.Row)
		}
	}
	for _, r := range recs {
		mark(r.Before)
		mark(r.After)
	}
	newIdx := make([]int32, len(batches))
	// rowMap[i], when set, maps old row numbers of batch i to new ones.
	rowMap := make([]map[int32]int32, len(batches))
	out := batches[:0:0]
	for i, b := range batches {
		rows := used[i]
		if len(rows) == 0 {
			b.Release()
			newIdx[i] = -1
			continue
		}
		slices.Sort(rows)
		rows = slices.Compact(rows)
		if int64(len(rows))*4 < b.NumRows() && b.NumRows() > 256 {
			if taken, err := takeRows(b, rows); err == nil {
				b.Release()
				b = taken
				m := make(map[int32]int32, len(rows))
				for j, r := range rows {
					m[r] = int32(j)
				}
				rowMap[i] = m
			}
		}
		newIdx[i] = int32(len(out))
		out = append(out, b)
	}
	remap := func(ref *changelog.RowRef) {
		if !ref.Valid() {
			return
		}
		if m := rowMap[ref.Batch]; m != nil {
			ref.Row = m[ref.Row]
		}
		ref.Batch = newIdx[ref.Batch]
	}
	for i := range recs {
		remap(&recs[i].Before)
		remap(&recs[i].After)
	}
	return out
}

// takeRows copies the given rows of a batch into a new batch. An error
// (a type arrow's take kernel lacks) leaves the caller with the original.
func takeRows(b arrow.RecordBatch, rows []int32) (arrow.RecordBatch, error) {
	bld := array.NewInt32Builder(memory.DefaultAllocator)
	bld.AppendValues(rows, nil)
	idx := bld.NewArray()
	bld.Release()
	defer idx.Release()
	cols := make([]arrow.Array, 0, b.NumCols())
	defer func() {
		for _, c := range cols {
			c.Release()
		}
	}()
	for _, col := range b.Columns() {
		taken, err := compute.TakeArray(context.Background(), col, idx)
		if err != nil {
			return nil, err
		}
		cols = append(cols, taken)
	}
	return array.NewRecordBatch(b.Schema(), cols, int64(len(rows))), nil
}
