package lsm

import (
	"context"
	"fmt"
	"slices"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/changelog"
	"github.com/lakegw/lakegw/lake"
)

// Writer buffers upserts and deletes (the memtable) and commits them as one
// Iceberg snapshot. A Writer is used by one goroutine; several Writers (in
// one process or many) may write one table at once.
type Writer struct {
	t     *Table
	sp    *spec
	ops   map[string][]op // by encoded key, in write order
	order []string        // keys in first-write order
	// buckets caches each key's bucket across commit attempts.
	buckets map[string]int
	// summary holds extra snapshot summary properties for the next
	// commit (SetSummary).
	summary iceberg.Properties
}

// op is one write of a key: a row to merge, or a delete.
type op struct {
	row Row
	del bool
}

// NewWriter returns a writer on the table's current schema.
func (t *Table) NewWriter(ctx context.Context) (*Writer, error) {
	_, sp, err := t.load(ctx)
	if err != nil {
		return nil, err
	}
	return &Writer{t: t, sp: sp, ops: map[string][]op{}, buckets: map[string]int{}}, nil
}

// Upsert writes a row, given by column name. Under partial-update a
// missing or null column keeps the stored value; under aggregation the row
// is folded into the stored aggregates.
func (w *Writer) Upsert(row map[string]any) error {
	r, err := w.sp.rowFromMap(row)
	if err != nil {
		return err
	}
	return w.add(r, false)
}

// Delete removes the row of a key (given by the key columns).
func (w *Writer) Delete(key map[string]any) error {
	r, err := w.sp.rowFromMap(key)
	if err != nil {
		return err
	}
	for i := range r {
		if !w.sp.isKey(i) {
			r[i] = nil
		}
	}
	return w.add(r, true)
}

func (w *Writer) add(r Row, del bool) error {
	k, err := w.sp.keyOf(r)
	if err != nil {
		return err
	}
	if _, ok := w.ops[k]; !ok {
		w.order = append(w.order, k)
	}
	w.ops[k] = append(w.ops[k], op{row: r, del: del})
	return nil
}

// CheckUpsert reports whether Upsert would take row, without writing it:
// a produce path refuses a bad record before its batch joins a commit.
func (w *Writer) CheckUpsert(row map[string]any) error {
	r, err := w.sp.rowFromMap(row)
	if err != nil {
		return err
	}
	_, err = w.sp.keyOf(r)
	return err
}

// CheckDelete reports whether Delete would take key, without writing it.
func (w *Writer) CheckDelete(key map[string]any) error {
	r, err := w.sp.rowFromMap(key)
	if err != nil {
		return err
	}
	_, err = w.sp.keyOf(r)
	return err
}

// Columns are the names of the table's columns the writer writes.
func (w *Writer) Columns() []string { return slices.Clone(w.sp.names) }

// SetSummary adds a property to the next commit's snapshot summary
// (lakegw's own lakegw.lsm.* keys win): a produce path records its
// producers' sequence state in the commit that holds their records.
func (w *Writer) SetSummary(key, value string) {
	if w.summary == nil {
		w.summary = iceberg.Properties{}
	}
	w.summary[key] = value
}

// Pending is the number of distinct keys written since the last commit.
func (w *Writer) Pending() int { return len(w.order) }

// CommitResult says what a commit did.
type CommitResult struct {
	// SnapshotID is the new snapshot; 0 when nothing changed (every write
	// was a no-op) and no snapshot was made.
	SnapshotID int64
	// Counts are the change records per bucket.
	Counts []int64
	// Ends are each bucket's end offset after the commit (nil when the
	// table's offsets before it are unknown).
	Ends []int64
	// Attempts is 1 plus the number of conflicts redone.
	Attempts int
	// BytesWritten counts data, delete and changelog files.
	BytesWritten int64
}

// Commit makes every buffered write visible in one snapshot. It looks up
// the current image of every written key, merges, and commits new sorted
// runs, position deletes of the replaced images and changelog files in one
// RowDelta. When another writer committed first, it reloads and redoes the
// lookups against the new head (that writer may have changed the same
// keys), up to Options.MaxCommitAttempts times. On success the writer is
// empty; on error it keeps its writes, so Commit can be called again.
func (w *Writer) Commit(ctx context.Context) (CommitResult, error) {
	var res CommitResult
	if len(w.order) == 0 {
		return res, nil
	}
	t := w.t
	var lastErr error
	for attempt := 1; attempt <= t.opts.MaxCommitAttempts; attempt++ {
		res.Attempts = attempt
		tbl, sp, err := t.loadUnleased(ctx)
		if err != nil {
			return res, err
		}
		if sp.schema.ID != w.sp.schema.ID {
			return res, fmt.Errorf("%s: the schema changed from %d to %d since the writer was made", t.Name(), w.sp.schema.ID, sp.schema.ID)
		}
		if err := w.assignBuckets(sp); err != nil {
			return res, err
		}
		snap, counts, ends, written, err := t.commitOnce(ctx, tbl, sp, w.byBucket(sp), w.summary)
		res.BytesWritten += written
		if err == nil {
			res.SnapshotID, res.Counts, res.Ends = snap, counts, ends
			w.ops, w.order, w.summary = map[string][]op{}, nil, nil
			if t.opts.AutoCompact && snap != 0 {
				if _, err := t.Compact(ctx, false); err != nil {
					t.log.Warn().Err(err).Msg("compaction after commit failed; the commit stands")
				}
			}
			return res, nil
		}
		if !lake.IsCommitConflict(err) {
			return res, err
		}
		lastErr = err
		t.log.Info().Err(err).Int("attempt", attempt).Msg("commit conflicted with another writer; redoing lookups on the new head")
	}
	return res, fmt.Errorf("commit to %s: gave up after %d conflicting attempts: %w", t.Name(), t.opts.MaxCommitAttempts, lastErr)
}

// assignBuckets computes the bucket of every new key, through the same
// key JSON hash that changelog/ uses for topic partitions.
func (w *Writer) assignBuckets(sp *spec) error {
	var rows []Row
	var keys []string
	for _, k := range w.order {
		if _, ok := w.buckets[k]; !ok {
			ops := w.ops[k]
			rows = append(rows, ops[0].row)
			keys = append(keys, k)
		}
	}
	if len(rows) == 0 {
		return nil
	}
	bs, err := bucketsOf(sp, rows)
	if err != nil {
		return err
	}
	for i, k := range keys {
		w.buckets[k] = bs[i]
	}
	return nil
}

// bucketsOf returns each row's bucket: murmur2 of its key JSON mod the
// bucket count, computed by changelog.KeyPartitions.
func bucketsOf(sp *spec, rows []Row) ([]int, error) {
	keyRows := make([]Row, len(rows))
	for i, r := range rows {
		kr := make(Row, len(r))
		for _, ci := range sp.keyIdx {
			kr[ci] = r[ci]
		}
		keyRows[i] = kr
	}
	sc, err := table.SchemaToArrowSchema(sp.schema, nil, true, false)
	if err != nil {
		return nil, fmt.Errorf("arrow schema: %w", err)
	}
	rec, err := buildRecord(sc, 0, keyRows, nil)
	if err != nil {
		return nil, err
	}
	defer rec.Release()
	ps, err := changelog.KeyPartitions(sp.schema, sp.keyIDs, sp.hashNames, rec, int32(sp.buckets))
	if err != nil {
		return nil, err
	}
	out := make([]int, len(ps))
	for i, p := range ps {
		out[i] = int(p)
	}
	return out, nil
}

// bucketWrites are the writes of one bucket, keys sorted.
type bucketWrites struct {
	bucket int
	keys   []string
	ops    [][]op
}

func (w *Writer) byBucket(sp *spec) []bucketWrites {
	per := make([][]string, sp.buckets)
	for _, k := range w.order {
		b := w.buckets[k]
		per[b] = append(per[b], k)
	}
	var out []bucketWrites
	for b, keys := range per {
		if len(keys) == 0 {
			continue
		}
		slices.Sort(keys)
		bw := bucketWrites{bucket: b, keys: keys, ops: make([][]op, len(keys))}
		for i, k := range keys {
			bw.ops[i] = w.ops[k]
		}
		out = append(out, bw)
	}
	return out
}
