package changelog

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// The retained changelog of an LSM table: a topic keeps its retention.ms of
// changes although the table keeps only an hour or so of snapshots (as
// Paimon's changelog.time-retained outlives snapshot.time-retained).
//
// When maintenance expires snapshots of an LSM table, it moves those still
// inside the topic's retention into a small JSON file, the changelog log,
// that the table property PropLSMChangelogLog names; their changelog files
// stay. The log starts right after a checkpoint: a snapshot that a tag
// (LSMCheckpointTagPrefix) keeps in the table, so its data files stay
// readable and the topic can start with its live rows (the compacted
// prefix, as Kafka's log compaction would leave). The topic's history is
// then the checkpoint, the logged snapshots, and the retained main branch
// (LSMHistory). Everything travels with the table: any gateway, with or
// without its state store, serves the same offsets.
const (
	// PropLSMChangelogLog is the table property naming the changelog log.
	PropLSMChangelogLog = "lakegw.lsm.changelog-log"
	// LSMCheckpointTagPrefix starts the names of the tags that keep
	// checkpoint snapshots; the snapshot id follows.
	LSMCheckpointTagPrefix = "lakegw-changelog-start-"
)

// LSMLog lists, oldest first, the expired snapshots of an LSM table whose
// changes the topic still serves. Entries form one parent chain; the first
// entry's parent is a checkpoint, the last entry is the parent of the
// oldest snapshot of the main branch.
type LSMLog struct {
	Version int           `json:"version"`
	Buckets int           `json:"buckets"`
	Entries []LSMLogEntry `json:"entries"`
	// Dropped are changelog files that left the topic at the expiry that
	// wrote this log; the next expiry deletes them.
	Dropped []string `json:"dropped,omitempty"`
}

// LSMLogEntry is one expired snapshot: what the offset index and the
// derivation need of it.
type LSMLogEntry struct {
	SnapshotID     int64  `json:"snapshot-id"`
	ParentID       int64  `json:"parent-snapshot-id"`
	SequenceNumber int64  `json:"sequence-number"`
	TimestampMs    int64  `json:"timestamp-ms"`
	SchemaID       int    `json:"schema-id"`
	Operation      string `json:"operation"`
	// Manifest is the snapshot's changelog manifest ("" when it has no
	// changes, as a compaction).
	Manifest string  `json:"manifest,omitempty"`
	Counts   []int64 `json:"counts"`
	// Bytes is the size of the snapshot's changelog files and manifest,
	// what retention.bytes counts.
	Bytes int64 `json:"bytes"`
}

// EncodeLSMLog renders a log as JSON.
func EncodeLSMLog(l LSMLog) ([]byte, error) {
	l.Version = 1
	return json.Marshal(l)
}

// DecodeLSMLog parses and checks a log.
func DecodeLSMLog(data []byte) (*LSMLog, error) {
	var l LSMLog
	if err := json.Unmarshal(data, &l); err != nil {
		return nil, fmt.Errorf("decode LSM changelog log: %w", err)
	}
	if l.Version != 1 {
		return nil, fmt.Errorf("LSM changelog log version %d: want 1", l.Version)
	}
	if l.Buckets < 1 {
		return nil, fmt.Errorf("LSM changelog log has %d buckets", l.Buckets)
	}
	for i, e := range l.Entries {
		if len(e.Counts) != l.Buckets {
			return nil, fmt.Errorf("LSM changelog log entry %d (snapshot %d) has %d counts for %d buckets", i, e.SnapshotID, len(e.Counts), l.Buckets)
		}
		for _, c := range e.Counts {
			if c < 0 {
				return nil, fmt.Errorf("LSM changelog log entry %d (snapshot %d): negative count", i, e.SnapshotID)
			}
		}
		if i > 0 && e.ParentID != l.Entries[i-1].SnapshotID {
			return nil, fmt.Errorf("LSM changelog log entry %d (snapshot %d) has parent %d, not the previous entry %d",
				i, e.SnapshotID, e.ParentID, l.Entries[i-1].SnapshotID)
		}
	}
	return &l, nil
}

// ReadLSMLog reads and checks the changelog log at path.
func ReadLSMLog(fs icebergio.IO, path string) (*LSMLog, error) {
	data, err := readWhole(fs, path)
	if err != nil {
		return nil, fmt.Errorf("changelog log: %w", err)
	}
	l, err := DecodeLSMLog(data)
	if err != nil {
		return nil, fmt.Errorf("changelog log %s: %w", path, err)
	}
	return l, nil
}

// Snapshot returns the logged snapshot id as a table snapshot carrying what
// derive.Derive and CountsFromSummary read (nil when not logged): the summary
// names its changelog manifest and counts as its writer's did.
func (l *LSMLog) Snapshot(id int64) *table.Snapshot {
	if l == nil {
		return nil
	}
	for i := range l.Entries {
		if e := &l.Entries[i]; e.SnapshotID == id {
			parent, schema := e.ParentID, e.SchemaID
			props := iceberg.Properties{SummaryLSMCounts: EncodeLSMCounts(e.Counts)}
			if e.Manifest != "" {
				props[SummaryLSMManifest] = e.Manifest
			}
			return &table.Snapshot{SnapshotID: e.SnapshotID, ParentSnapshotID: &parent, SequenceNumber: e.SequenceNumber,
				TimestampMs: e.TimestampMs, SchemaID: &schema,
				Summary: &table.Summary{Operation: table.Operation(e.Operation), Properties: props}}
		}
	}
	return nil
}

// LSMLogs are the changelog logs a topic may still read from: the current
// one and the one it replaced, whose snapshots fetches located a moment
// before the index moved past them.
type LSMLogs []*LSMLog

// Snapshot looks id up in each log in turn (nil: in none).
func (ls LSMLogs) Snapshot(id int64) *table.Snapshot {
	for _, l := range ls {
		if s := l.Snapshot(id); s != nil {
			return s
		}
	}
	return nil
}

// LogEntryOf describes an expired snapshot of an LSM table for the log.
func LogEntryOf(props iceberg.Properties, s *table.Snapshot, buckets int) (LSMLogEntry, error) {
	e := LSMLogEntry{SnapshotID: s.SnapshotID, SequenceNumber: s.SequenceNumber, TimestampMs: s.TimestampMs, ParentID: -1}
	if s.ParentSnapshotID != nil {
		e.ParentID = *s.ParentSnapshotID
	}
	if s.SchemaID != nil {
		e.SchemaID = *s.SchemaID
	}
	if s.Summary != nil {
		e.Operation = string(s.Summary.Operation)
		e.Manifest = s.Summary.Properties[SummaryLSMManifest]
	}
	counts, ok, err := CountsFromSummary(props, s, int32(buckets))
	if err != nil {
		return e, err
	}
	if !ok {
		return e, fmt.Errorf("snapshot %d was not written by lakegw's LSM writer: its changes cannot be kept past expiry", s.SnapshotID)
	}
	e.Counts = counts
	return e, nil
}

// IsLSMCheckpointTag reports whether a ref name is a checkpoint tag.
func IsLSMCheckpointTag(name string) bool { return strings.HasPrefix(name, LSMCheckpointTagPrefix) }

// LSMHistory is MainHistory for a table whose expired history is partly
// kept in a changelog log: the checkpoint the log starts after (LogStart
// set: its live rows start the topic), the logged snapshots, then the main
// branch. Without a log, or when the log does not lead into the main
// branch (every logged snapshot is older than a checkpoint that expired
// since), it is the main branch alone.
func LSMHistory(meta table.Metadata, log *LSMLog) ([]SnapshotRef, error) {
	main, err := MainHistory(meta)
	if err != nil || log == nil || len(log.Entries) == 0 || len(main) == 0 {
		return main, err
	}
	first := meta.SnapshotByID(main[0].SnapshotID)
	last := log.Entries[len(log.Entries)-1]
	if first == nil || first.ParentSnapshotID == nil || *first.ParentSnapshotID != last.SnapshotID {
		return main, nil
	}
	start := meta.SnapshotByID(log.Entries[0].ParentID)
	if start == nil {
		return nil, fmt.Errorf("the changelog log starts after snapshot %d, which is not in the table metadata (its checkpoint tag was removed?)", log.Entries[0].ParentID)
	}
	out := make([]SnapshotRef, 0, 1+len(log.Entries)+len(main))
	ref := refOf(start)
	ref.LogStart = true
	out = append(out, ref)
	for _, e := range log.Entries {
		out = append(out, SnapshotRef{SnapshotID: e.SnapshotID, SequenceNumber: e.SequenceNumber, TimestampMs: e.TimestampMs, Operation: e.Operation})
	}
	return append(out, main...), nil
}

func refOf(s *table.Snapshot) SnapshotRef {
	ref := SnapshotRef{SnapshotID: s.SnapshotID, SequenceNumber: s.SequenceNumber, TimestampMs: s.TimestampMs}
	if s.Summary != nil {
		ref.Operation = string(s.Summary.Operation)
	}
	return ref
}
