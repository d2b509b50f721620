package produce

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/changelog"
	"github.com/lakegw/lakegw/lake"
	"github.com/lakegw/lakegw/lsm"
)

// tableTarget commits a table topic's batches to a lakegw primary-key
// table: every record's row operations go through one lsm.Writer per
// group, so the commit writes the table's sorted runs, deletes and
// changelog files as any lakegw write does, and the topic serves the
// changelog. Offsets are the changelog's: a batch is answered with where
// this commit's changes begin in its partition.
type tableTarget struct {
	tbl    *lsm.Table
	format string
	// evolve adds the fields records bring as columns
	// (ConfigAutoEvolve); cat and ident say where.
	evolve bool
	cat    catalog.Catalog
	ident  table.Identifier

	// checker validates records against the table's schema at accept
	// time; guarded by mu (an lsm.Writer serves one goroutine).
	mu      sync.Mutex
	checker *lsm.Writer
}

// RecordError is a record of a batch the table refuses: the batch fails
// with INVALID_RECORD and this message for the record (ProduceResponse
// record errors), and nothing of it is written.
type RecordError struct {
	Index int
	Err   error
}

func (e *RecordError) Error() string { return fmt.Sprintf("record %d: %v", e.Index, e.Err) }
func (e *RecordError) Unwrap() error { return ErrInvalidRecord }

// prepare decodes every record in the topic's format and checks each row
// against the table, keeping the operations for the commit.
func (tt *tableTarget) prepare(t *ticket) error {
	var ops []rowOp
	tt.mu.Lock()
	defer tt.mu.Unlock()
	for i := range t.batch.Records {
		rops, err := rowOps(tt.format, &t.batch.Records[i])
		if err != nil {
			return &RecordError{Index: i, Err: err}
		}
		if tt.evolve {
			if err := tt.evolveFor(rops); err != nil {
				return &RecordError{Index: i, Err: err}
			}
		}
		for _, op := range rops {
			check := tt.checker.CheckUpsert
			if op.del {
				check = tt.checker.CheckDelete
			}
			if err := check(op.row); err != nil {
				return &RecordError{Index: i, Err: err}
			}
		}
		ops = append(ops, rops...)
	}
	t.ops = ops
	return nil
}

// commit applies the group's operations in accept order and commits them.
func (tt *tableTarget) commit(ctx context.Context, group []*ticket, producers func([]int64) (iceberg.Properties, error)) (landed, error) {
	w, err := tt.tbl.NewWriter(ctx)
	if err != nil {
		return landed{}, err
	}
	for _, t := range group {
		for _, op := range t.ops {
			if op.del {
				err = w.Delete(op.row)
			} else {
				err = w.Upsert(op.row)
			}
			if err != nil {
				// Checked when accepted: only a schema change since can
				// refuse it now.
				return landed{}, fmt.Errorf("%w: %w", ErrInvalidRecord, err)
			}
		}
	}
	ps, err := producers(nil)
	if err != nil {
		return landed{}, err
	}
	for k, v := range ps {
		w.SetSummary(k, v)
	}
	res, err := w.Commit(ctx)
	if err != nil {
		if lake.IsCommitConflict(err) {
			return landed{}, err // lsm gave up on conflicts: nothing landed
		}
		// Any other failure may follow the catalog's taking the commit.
		return landed{}, &maybeCommitted{err}
	}
	bases := make([]int64, len(group))
	for i, t := range group {
		p := t.batch.Partition
		switch {
		case res.SnapshotID == 0 || res.Ends == nil || int(p) >= len(res.Ends) || int(p) >= len(res.Counts):
			// Every write a no-op (no commit), or offsets unknown.
			bases[i] = -1
		default:
			bases[i] = res.Ends[p] - res.Counts[p]
		}
	}
	l := landed{bases: bases, snapshotID: res.SnapshotID}
	if res.SnapshotID != 0 {
		l.ends = res.Ends
	}
	return l, nil
}

// evolveTimeout bounds one schema evolution.
const evolveTimeout = 30 * time.Second

// evolveFor adds the columns ops bring that the table lacks, and renews
// the checker on the new schema. Called with tt.mu held.
func (tt *tableTarget) evolveFor(ops []rowOp) error {
	cols, err := newColumns(tt.checker.Columns(), ops)
	if err != nil {
		return err
	}
	defer func() {
		// A field the table lacks that is null here says nothing: it is
		// dropped rather than refused (its type comes with a value).
		known := tt.checker.Columns()
		for _, op := range ops {
			for name, v := range op.row {
				if v == nil && !slices.Contains(known, name) {
					delete(op.row, name)
				}
			}
		}
	}()
	if len(cols) == 0 {
		return nil
	}
	// Held under tt.mu: bounded, so a stuck catalog cannot hold every
	// producer of the topic for longer.
	ctx, cancel := context.WithTimeout(context.Background(), evolveTimeout)
	defer cancel()
	if err := addColumns(ctx, tt.cat, tt.ident, cols); err != nil {
		return err
	}
	checker, err := tt.tbl.NewWriter(ctx)
	if err != nil {
		return err
	}
	tt.checker = checker
	return nil
}

// find looks for the commit id names: its summary's counts and ends give
// each batch's base, as commit does.
func (tt *tableTarget) find(ctx context.Context, id string, group []*ticket) (landed, bool, error) {
	tbl, err := tt.cat.LoadTable(ctx, tt.ident)
	if err != nil {
		return landed{}, false, err
	}
	snap := findCommit(tbl, id)
	if snap == nil {
		return landed{}, false, nil
	}
	n, err := strconv.Atoi(tbl.Properties()[changelog.PropPartitions])
	if err != nil || n < 1 {
		return landed{}, false, fmt.Errorf("table topic: %s=%q", changelog.PropPartitions, tbl.Properties()[changelog.PropPartitions])
	}
	counts, _, err := changelog.CountsFromSummary(tbl.Properties(), snap, int32(n))
	if err != nil {
		return landed{}, false, err
	}
	ends, ok, err := changelog.LSMEnds(tbl.Metadata(), snap, n)
	if err != nil {
		return landed{}, false, err
	}
	bases := make([]int64, len(group))
	for i, t := range group {
		p := t.batch.Partition
		if !ok || counts == nil || int(p) >= n {
			bases[i] = -1
			continue
		}
		bases[i] = ends[p] - counts[p]
	}
	l := landed{bases: bases, snapshotID: snap.SnapshotID}
	if ok {
		l.ends = ends
	}
	return l, true, nil
}

// load is the table as it is now.
func (tt *tableTarget) load(ctx context.Context) (*table.Table, error) {
	return tt.cat.LoadTable(ctx, tt.ident)
}
