package derive

import (
	"context"
	"fmt"

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
	if opts.Partitions > 1 {
		return 0, false, nil
	}
	s := tbl.Metadata().SnapshotByID(snap.SnapshotID)
	if s == nil {
		s = opts.Retained.Snapshot(snap.SnapshotID, snap.SequenceNumber)
	}
	if s == nil {
		return 0, false, fmt.Errorf("snapshot %d is not in the metadata of %s", snap.SnapshotID, tableName(tbl))
	}
	op := snap.Operation
	if op == "" && s.Summary != nil {
		op = string(s.Summary.Operation)
	}
	if op == string(table.OpReplace) || lsmManifestPath(tbl, s) != "" {
		return 0, false, nil
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return 0, false, fmt.Errorf("file IO: %w", err)
	}
	manifests, err := readManifestList(fs, s)
	if err != nil {
		return 0, false, err
	}
	delta, err := readDelta(fs, s, manifests)
	if err != nil {
		return 0, false, err
	}
	if !delta.pureAppend() {
		return 0, false, nil
	}
	for _, e := range delta.addedData {
		c := e.DataFile().Count()
		if c < 0 {
			return 0, false, fmt.Errorf("data file %s of snapshot %d has a record count of %d in its manifest", e.DataFile().FilePath(), snap.SnapshotID, c)
		}
		n += c
	}
	return n, true, nil
}
