package changelog

import (
	"fmt"
	"slices"

	"github.com/apache/iceberg-go/table"
)

// SnapshotRef is a snapshot of the main branch with the sequence number lakegw
// reports for it.
type SnapshotRef struct {
	SnapshotID int64
	// SequenceNumber is the snapshot's sequence number; for format v1
	// tables, which have none, its position in the main-branch history
	// counting from 1.
	SequenceNumber int64
	TimestampMs    int64
	Operation      string
	// LogStart marks the checkpoint an LSM table's changelog log starts
	// after (LSMHistory): the topic starts with its live rows.
	LogStart bool
}

// MainHistory returns the snapshots of the main branch, oldest first: the
// current main snapshot and its ancestors. Snapshots that are no longer in
// the metadata (expired) end the walk.
func MainHistory(meta table.Metadata) ([]SnapshotRef, error) {
	out, _, err := walkMain(meta, nil)
	if err != nil {
		return nil, err
	}
	if meta.Version() == 1 {
		for i := range out {
			out[i].SequenceNumber = int64(i + 1)
		}
	}
	return out, nil
}

// MainHistorySince returns the snapshots of the main branch after the one
// last indexed, oldest first, walking back from the main head only as far
// as last: the cost is the number of new snapshots, not the table's
// history. ok is false when last is not an ancestor of the main head (a
// rollback, a rewritten branch, or last expired): the caller must then
// align the whole history. For format v1 tables the sequence numbers go on
// from last's.
func MainHistorySince(meta table.Metadata, last SnapshotRef) (refs []SnapshotRef, ok bool, err error) {
	out, found, err := walkMain(meta, &last.SnapshotID)
	if err != nil || !found {
		return nil, false, err
	}
	if meta.Version() == 1 {
		for i := range out {
			out[i].SequenceNumber = last.SequenceNumber + int64(i+1)
		}
	}
	return out, true, nil
}

// walkMain walks the main branch from its head back through parents until
// a snapshot is missing (expired), the first snapshot, or stop (excluded;
// found says whether it was reached), and returns what it walked oldest
// first.
func walkMain(meta table.Metadata, stop *int64) (out []SnapshotRef, found bool, err error) {
	head, err := mainHead(meta)
	if err != nil {
		return nil, false, err
	}
	seen := map[int64]bool{}
	for s := head; s != nil; {
		if stop != nil && s.SnapshotID == *stop {
			found = true
			break
		}
		if seen[s.SnapshotID] {
			return nil, false, fmt.Errorf("snapshot %d is its own ancestor", s.SnapshotID)
		}
		seen[s.SnapshotID] = true
		op := ""
		if s.Summary != nil {
			op = string(s.Summary.Operation)
		}
		out = append(out, SnapshotRef{
			SnapshotID:     s.SnapshotID,
			SequenceNumber: s.SequenceNumber,
			TimestampMs:    s.TimestampMs,
			Operation:      op,
		})
		if s.ParentSnapshotID == nil {
			break
		}
		s = meta.SnapshotByID(*s.ParentSnapshotID)
	}
	slices.Reverse(out)
	return out, found, nil
}

// mainHead is the snapshot the main branch names (the current snapshot
// when there is no main ref), nil for a table without snapshots.
func mainHead(meta table.Metadata) (*table.Snapshot, error) {
	head := meta.CurrentSnapshot()
	for name, ref := range meta.Refs() {
		if name != table.MainBranch {
			continue
		}
		head = meta.SnapshotByID(ref.SnapshotID)
		if head == nil {
			return nil, fmt.Errorf("main branch names snapshot %d, which is not in the table metadata", ref.SnapshotID)
		}
	}
	return head, nil
}
