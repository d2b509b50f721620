package changelog

import (
	"encoding/json"
	"fmt"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/lake"
)

// The pinned log of a table lakegw maintains that is not an LSM table (the
// quickstart demo, any table marked lakegw.maintenance.enabled): the
// snapshots a committed group offset still needs after the table's own
// retention expired them.
//
// Iceberg keeps every snapshot in the metadata file that each commit
// rewrites (some 800 bytes apiece), so a pin that kept a day of snapshots
// in the table would make every commit of a streaming table rewrite tens
// of megabytes. Maintenance expires them as usual instead and lists them
// here, in a file written once per maintenance pass (as Paimon's consumer
// pins keep snapshot files, which are small files of their own); it keeps
// every file those snapshots reference until the pin lets them go. The
// topic's history is then the logged snapshots followed by the retained
// main branch (PinnedHistory), and a gateway derives a logged snapshot
// from a view of the table that holds them (WithPinned).
const (
	// PropPinnedLog is the table property naming the pinned log (absent:
	// nothing logged).
	PropPinnedLog = "lakegw.pinned-log"
	// pinnedLogVersion is the version EncodePinnedLog writes.
	pinnedLogVersion = 1
)

// PinnedLog lists, oldest first, expired snapshots of the main branch that
// a consumer's pin still holds. They form one parent chain, and the last
// one is the parent of the main branch's oldest retained snapshot.
type PinnedLog struct {
	Version   int              `json:"version"`
	Snapshots []table.Snapshot `json:"snapshots"`
}

// EncodePinnedLog renders a pinned log as JSON.
func EncodePinnedLog(l PinnedLog) ([]byte, error) {
	l.Version = pinnedLogVersion
	return json.Marshal(l)
}

// DecodePinnedLog parses and checks a pinned log.
func DecodePinnedLog(data []byte) (*PinnedLog, error) {
	var l PinnedLog
	if err := json.Unmarshal(data, &l); err != nil {
		return nil, fmt.Errorf("decode pinned log: %w", err)
	}
	if l.Version != pinnedLogVersion {
		return nil, fmt.Errorf("pinned log version %d: want %d", l.Version, pinnedLogVersion)
	}
	for i, s := range l.Snapshots {
		if s.ManifestList == "" {
			return nil, fmt.Errorf("pinned log entry %d (snapshot %d) has no manifest list", i, s.SnapshotID)
		}
		if i > 0 && (s.ParentSnapshotID == nil || *s.ParentSnapshotID != l.Snapshots[i-1].SnapshotID) {
			return nil, fmt.Errorf("pinned log entry %d (snapshot %d) does not follow entry %d (snapshot %d)",
				i, s.SnapshotID, i-1, l.Snapshots[i-1].SnapshotID)
		}
		if i > 0 && s.SequenceNumber <= l.Snapshots[i-1].SequenceNumber {
			return nil, fmt.Errorf("pinned log entry %d (snapshot %d) has sequence number %d, not above the previous entry's %d",
				i, s.SnapshotID, s.SequenceNumber, l.Snapshots[i-1].SequenceNumber)
		}
	}
	return &l, nil
}

// ReadPinnedLog reads and checks the pinned log at path.
func ReadPinnedLog(fs icebergio.IO, path string) (*PinnedLog, error) {
	data, err := lake.ReadFile(fs, path)
	if err != nil {
		return nil, fmt.Errorf("pinned log: %w", err)
	}
	l, err := DecodePinnedLog(data)
	if err != nil {
		return nil, fmt.Errorf("pinned log %s: %w", path, err)
	}
	return l, nil
}

// Len is the number of logged snapshots (0 for a nil log).
func (l *PinnedLog) Len() int {
	if l == nil {
		return 0
	}
	return len(l.Snapshots)
}

// Leads reports whether the log ends at the parent of main's oldest
// snapshot, the retained history it must lead into: a log that does not
// (another writer expired or rolled back past it) describes no history of
// the topic.
func (l *PinnedLog) Leads(main []SnapshotRef, meta table.Metadata) bool {
	if l.Len() == 0 || len(main) == 0 {
		return false
	}
	first := meta.SnapshotByID(main[0].SnapshotID)
	last := l.Snapshots[len(l.Snapshots)-1]
	return first != nil && first.ParentSnapshotID != nil && *first.ParentSnapshotID == last.SnapshotID
}

// PinnedHistory returns the topic's history of a table with a pinned log:
// the logged snapshots, then the main branch. A log that does not lead
// into the main branch is left out (ok false): the topic then starts at
// the main branch, as after any expiry.
func PinnedHistory(meta table.Metadata, l *PinnedLog) (hist []SnapshotRef, ok bool, err error) {
	main, err := MainHistory(meta)
	if err != nil {
		return nil, false, err
	}
	if !l.Leads(main, meta) {
		return main, l.Len() == 0, nil
	}
	hist = make([]SnapshotRef, 0, len(l.Snapshots)+len(main))
	for _, s := range l.Snapshots {
		op := ""
		if s.Summary != nil {
			op = string(s.Summary.Operation)
		}
		hist = append(hist, SnapshotRef{SnapshotID: s.SnapshotID, SequenceNumber: s.SequenceNumber, TimestampMs: s.TimestampMs, Operation: op})
	}
	return append(hist, main...), true, nil
}

// WithPinned returns a view of tbl whose metadata also holds the logged
// snapshots, for reading them: their manifest lists and files are kept
// while they are logged, so iceberg-go plans and scans them as any
// snapshot. The view is for reading only (it has no catalog). It costs one
// pass over the metadata JSON, so a gateway builds it when the log
// changes, not at every commit.
func WithPinned(tbl *table.Table, l *PinnedLog) (*table.Table, error) {
	if l.Len() == 0 {
		return tbl, nil
	}
	raw, err := json.Marshal(tbl.Metadata())
	if err != nil {
		return nil, fmt.Errorf("encode metadata of %s: %w", tbl.MetadataLocation(), err)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("decode metadata of %s: %w", tbl.MetadataLocation(), err)
	}
	var snaps []json.RawMessage
	if s, ok := doc["snapshots"]; ok {
		if err := json.Unmarshal(s, &snaps); err != nil {
			return nil, fmt.Errorf("decode snapshots of %s: %w", tbl.MetadataLocation(), err)
		}
	}
	all := make([]json.RawMessage, 0, len(l.Snapshots)+len(snaps))
	for _, s := range l.Snapshots {
		if tbl.Metadata().SnapshotByID(s.SnapshotID) != nil {
			continue
		}
		b, err := json.Marshal(s)
		if err != nil {
			return nil, fmt.Errorf("encode pinned snapshot %d: %w", s.SnapshotID, err)
		}
		all = append(all, b)
	}
	if doc["snapshots"], err = json.Marshal(append(all, snaps...)); err != nil {
		return nil, err
	}
	if raw, err = json.Marshal(doc); err != nil {
		return nil, err
	}
	meta, err := table.ParseMetadataBytes(raw)
	if err != nil {
		return nil, fmt.Errorf("metadata of %s with its pinned snapshots: %w", tbl.MetadataLocation(), err)
	}
	return table.New(tbl.Identifier(), meta, tbl.MetadataLocation(), tbl.FS, nil), nil
}
