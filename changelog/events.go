package changelog

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
)

// buildRecords turns the removed and added rows of a snapshot into events.
// With key fields, a removed and an added row with equal key values become
// one update (first with first). Order: the deletes that stayed deletes,
// then inserts and updates in the order of the added rows; placing an update
// at its after-image keeps every key's events in a valid order even when a
// key has several removed rows.
func buildRecords(batches []arrow.RecordBatch, deletes, inserts []RowRef, c *Changes) ([]Record, error) {
	recs := make([]Record, 0, len(deletes)+len(inserts))
	pairedBefore := make([]RowRef, len(inserts))
	for i := range pairedBefore {
		pairedBefore[i] = NoRow
	}
	deleted := make([]bool, len(deletes))
	if len(c.KeyFieldIDs) > 0 && len(deletes) > 0 && len(inserts) > 0 {
		keys := make([]appendFn, len(batches))
		for i, b := range batches {
			fn, err := newKeyAppender(c.Schema, b, c.KeyFieldIDs)
			if err != nil {
				return nil, fmt.Errorf("key of batch %d: %w", i, err)
			}
			keys[i] = fn
		}
		var buf []byte
		byKey := map[string][]int{}
		for i, ref := range deletes {
			buf = keys[ref.Batch](buf[:0], int(ref.Row))
			byKey[string(buf)] = append(byKey[string(buf)], i)
		}
		for i, ref := range inserts {
			buf = keys[ref.Batch](buf[:0], int(ref.Row))
			queue := byKey[string(buf)]
			if len(queue) == 0 {
				continue
			}
			pairedBefore[i] = deletes[queue[0]]
			deleted[queue[0]] = true
			byKey[string(buf)] = queue[1:]
		}
	}
	for i, ref := range deletes {
		if !deleted[i] {
			recs = append(recs, Record{Op: OpDelete, Before: ref, After: NoRow})
		}
	}
	for i, ref := range inserts {
		if pairedBefore[i].Valid() {
			recs = append(recs, Record{Op: OpUpdate, Before: pairedBefore[i], After: ref})
		} else {
			recs = append(recs, Record{Op: OpInsert, Before: NoRow, After: ref})
		}
	}
	return recs, nil
}

// compactBatches drops the batches no record references and renumbers the
// references, so a Changes holds only what its records need.
func compactBatches(batches []arrow.RecordBatch, recs []Record) []arrow.RecordBatch {
	used := make([]bool, len(batches))
	for _, r := range recs {
		if r.Before.Valid() {
			used[r.Before.Batch] = true
		}
		if r.After.Valid() {
			used[r.After.Batch] = true
		}
	}
	newIdx := make([]int32, len(batches))
	out := batches[:0:0]
	for i, b := range batches {
		if !used[i] {
			b.Release()
			newIdx[i] = -1
			continue
		}
		newIdx[i] = int32(len(out))
		out = append(out, b)
	}
	for i := range recs {
		if recs[i].Before.Valid() {
			recs[i].Before.Batch = newIdx[recs[i].Before.Batch]
		}
		if recs[i].After.Valid() {
			recs[i].After.Batch = newIdx[recs[i].After.Batch]
		}
	}
	return out
}
