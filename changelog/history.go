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
	var out []SnapshotRef
	seen := map[int64]bool{}
	for s := head; s != nil; {
		if seen[s.SnapshotID] {
			return nil, fmt.Errorf("snapshot %d is its own ancestor", s.SnapshotID)
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
	if meta.Version() == 1 {
		for i := range out {
			out[i].SequenceNumber = int64(i + 1)
		}
	}
	return out, nil
}
