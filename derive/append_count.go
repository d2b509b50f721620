package derive

import (
	"context"
	"fmt"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/changelog"
)

// AppendCount returns how many records Derive gives snap when snap is a
// pure append (each row of its added data files an insert), read from its
// manifests alone: a data file's record count is the rows Derive reads
// from it (checkFile refuses a file whose footer or rows say otherwise).
// ok is false for every snapshot whose records depend on more than its
// manifests: one that removes or deletes anything, a replace, a lakegw LSM
// table's (its changelog files carry the changes), and any whose records
// are spread over more than one partition (by each row's key).
//
// A gateway indexes a large append with it rather than deriving the whole
// snapshot only to count it: ten million rows are about 1.9 GiB decoded.
func AppendCount(ctx context.Context, tbl *table.Table, snap changelog.SnapshotRef, opts Options) (n int64, ok bool, err error) {
	defer recoverRead(&err, func() string {
		return fmt.Sprintf("count the records of %s snapshot %d", tableName(tbl), snap.SnapshotID)
	})
	p, ok, err := planAppend(ctx, tbl, snap, opts)
	if !ok || err != nil {
		return 0, ok, err
	}
	return p.total(), true, nil
}

// streamPlan is what a stream reads: records that are the rows of tasks
// (all on one partition), task by task, rows in file order, each an event
// of op.
type streamPlan struct {
	snap *table.Snapshot
	fs   icebergio.IO
	// delta is an append's (nil for live rows): the next snapshot's plan
	// is made from it (notePlan).
	delta *snapshotDelta
	tasks []table.FileScanTask
	op    changelog.Op
	// first[i] is the first record of task i; first[len] the count.
	first []int64
}

func (p *streamPlan) total() int64 { return p.first[len(p.first)-1] }

// rows is how many records task i gives.
func (p *streamPlan) rows(i int) int64 { return p.first[i+1] - p.first[i] }

// fileOf returns the task that holds record r.
func (p *streamPlan) fileOf(r int64) int {
	lo, hi := 0, len(p.first)-2
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if p.first[mid] <= r {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	return lo
}

// planAppend plans snap when its records are those of a pure append on
// one partition, read from its manifests; ok is false otherwise (see
// AppendCount).
func planAppend(ctx context.Context, tbl *table.Table, snap changelog.SnapshotRef, opts Options) (_ *streamPlan, ok bool, _ error) {
	if opts.Partitions > 1 {
		return nil, false, nil
	}
	s, err := findSnapshot(tbl, snap, opts)
	if err != nil {
		return nil, false, err
	}
	op := snap.Operation
	if op == "" && s.Summary != nil {
		op = string(s.Summary.Operation)
	}
	if op == string(table.OpReplace) || lsmManifestPath(tbl, s) != "" {
		return nil, false, nil
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("file IO: %w", err)
	}
	manifests, err := readManifestList(fs, s)
	if err != nil {
		return nil, false, err
	}
	delta, err := readDelta(fs, s, manifests)
	if err != nil {
		return nil, false, err
	}
	if !delta.pureAppend() {
		return nil, false, nil
	}
	p := &streamPlan{snap: s, fs: fs, delta: delta, op: changelog.OpInsert, first: make([]int64, 0, len(delta.addedData)+1)}
	var n int64
	for _, e := range delta.addedData {
		c := e.DataFile().Count()
		if c < 0 {
			return nil, false, fmt.Errorf("data file %s of snapshot %d has a record count of %d in its manifest", e.DataFile().FilePath(), snap.SnapshotID, c)
		}
		p.tasks = append(p.tasks, dataTask(e))
		p.first = append(p.first, n)
		n += c
	}
	p.first = append(p.first, n)
	return p, true, nil
}

// findSnapshot finds snap in the table metadata, or in the retained
// changelog logs of an LSM table.
func findSnapshot(tbl *table.Table, snap changelog.SnapshotRef, opts Options) (*table.Snapshot, error) {
	s := tbl.Metadata().SnapshotByID(snap.SnapshotID)
	if s == nil {
		s = opts.Retained.Snapshot(snap.SnapshotID, snap.SequenceNumber)
	}
	if s == nil {
		return nil, fmt.Errorf("snapshot %d is not in the metadata of %s", snap.SnapshotID, tableName(tbl))
	}
	return s, nil
}
