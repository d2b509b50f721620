package changelog

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/lake"
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
// changes the topic still serves. Its entries form one parent chain; the
// first entry's parent is a checkpoint, the last entry is the parent of
// the oldest snapshot of the main branch.
//
// The file the table names is the log's head: the sealed segments (files
// of up to PropLSMLogSegmentEntries entries, never rewritten) and the tail
// of entries after them. An expiry rewrites the head alone, and a reader
// that already holds a segment reuses it, so neither grows with
// retention.ms (a week of one commit a second is 600,000 entries).
type LSMLog struct {
	Version  int             `json:"version"`
	Buckets  int             `json:"buckets"`
	Segments []LSMLogSegment `json:"segments,omitempty"`
	// Tail are the entries after the last segment.
	Tail []LSMLogEntry `json:"entries"`
	// Dropped are changelog files that left the topic at the expiry that
	// wrote this log; the next expiry deletes them.
	Dropped []string `json:"dropped,omitempty"`
	// sealed holds each segment's entries once loaded (nil: not yet).
	sealed [][]LSMLogEntry
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

// lsmLogVersion is the version EncodeLSMLog writes: 2 has segments; a
// version 1 log, all tail, still reads.
const lsmLogVersion = 2

// EncodeLSMLog renders a log's head as JSON.
func EncodeLSMLog(l LSMLog) ([]byte, error) {
	l.Version = lsmLogVersion
	return json.Marshal(l)
}

// DecodeLSMLog parses and checks a log's head; its segments are not loaded.
func DecodeLSMLog(data []byte) (*LSMLog, error) {
	var l LSMLog
	if err := json.Unmarshal(data, &l); err != nil {
		return nil, fmt.Errorf("decode LSM changelog log: %w", err)
	}
	if l.Version != 1 && l.Version != lsmLogVersion {
		return nil, fmt.Errorf("LSM changelog log version %d: want 1 or %d", l.Version, lsmLogVersion)
	}
	if l.Buckets < 1 {
		return nil, fmt.Errorf("LSM changelog log has %d buckets", l.Buckets)
	}
	if l.Version == 1 && len(l.Segments) > 0 {
		return nil, fmt.Errorf("LSM changelog log version 1 has segments")
	}
	prev := int64(0)
	for i, sg := range l.Segments {
		if err := sg.check(); err != nil {
			return nil, fmt.Errorf("LSM changelog log segment %d: %w", i, err)
		}
		if i > 0 && sg.FirstParentID != prev {
			return nil, fmt.Errorf("LSM changelog log segment %d (%s) starts after snapshot %d, not the previous segment's last %d",
				i, sg.Path, sg.FirstParentID, prev)
		}
		prev = sg.LastID
	}
	if err := checkEntries(l.Tail, l.Buckets); err != nil {
		return nil, fmt.Errorf("LSM changelog log: %w", err)
	}
	if len(l.Segments) > 0 && len(l.Tail) > 0 && l.Tail[0].ParentID != prev {
		return nil, fmt.Errorf("LSM changelog log tail starts after snapshot %d, not the last segment's %d", l.Tail[0].ParentID, prev)
	}
	l.sealed = make([][]LSMLogEntry, len(l.Segments))
	return &l, nil
}

// checkEntries checks that entries form one parent chain, each with a
// count per bucket.
func checkEntries(es []LSMLogEntry, buckets int) error {
	for i, e := range es {
		if len(e.Counts) != buckets {
			return fmt.Errorf("entry %d (snapshot %d) has %d counts for %d buckets", i, e.SnapshotID, len(e.Counts), buckets)
		}
		for _, c := range e.Counts {
			if c < 0 {
				return fmt.Errorf("entry %d (snapshot %d): negative count", i, e.SnapshotID)
			}
		}
		if i > 0 && e.ParentID != es[i-1].SnapshotID {
			return fmt.Errorf("entry %d (snapshot %d) has parent %d, not the previous entry %d",
				i, e.SnapshotID, e.ParentID, es[i-1].SnapshotID)
		}
	}
	return nil
}

// ReadLSMLogHead reads and checks the head of the changelog log at path,
// loading none of its segments (Segment loads one).
func ReadLSMLogHead(fs icebergio.IO, path string) (*LSMLog, error) {
	data, err := lake.ReadFile(fs, path)
	if err != nil {
		return nil, fmt.Errorf("changelog log: %w", err)
	}
	l, err := DecodeLSMLog(data)
	if err != nil {
		return nil, fmt.Errorf("changelog log %s: %w", path, err)
	}
	return l, nil
}

// ReadLSMLog reads the changelog log at path with every segment, taking
// those prev (a log read before, or nil) already holds from it.
func ReadLSMLog(fs icebergio.IO, path string, prev *LSMLog) (*LSMLog, error) {
	l, err := ReadLSMLogHead(fs, path)
	if err != nil {
		return nil, err
	}
	// A segment prev holds is reused, from the entry this head starts it
	// at (a truncation moves a segment's start, never its file's content).
	type heldSegment struct {
		skip    int
		entries []LSMLogEntry
	}
	held := map[string]heldSegment{}
	if prev != nil {
		for i, sg := range prev.Segments {
			if prev.sealed[i] != nil {
				held[sg.Path] = heldSegment{skip: sg.Skip, entries: prev.sealed[i]}
			}
		}
	}
	for i, sg := range l.Segments {
		if h, ok := held[sg.Path]; ok && sg.Skip >= h.skip && len(h.entries) == sg.Skip-h.skip+sg.Count {
			l.sealed[i] = h.entries[sg.Skip-h.skip:]
			continue
		}
		if _, err := l.Segment(fs, i); err != nil {
			return nil, fmt.Errorf("changelog log %s: %w", path, err)
		}
	}
	return l, nil
}

// Snapshot returns the logged snapshot id, whose sequence number is seq, as
// a table snapshot carrying what derive.Derive and CountsFromSummary read
// (nil when not logged): the summary names its changelog manifest and
// counts as its writer's did. Entries are ordered by sequence number, so
// the lookup is a binary search, not a walk of a week of entries.
func (l *LSMLog) Snapshot(id, seq int64) *table.Snapshot {
	e := l.entryAt(seq)
	if e == nil || e.SnapshotID != id {
		return nil
	}
	parent, schema := e.ParentID, e.SchemaID
	props := iceberg.Properties{SummaryLSMCounts: EncodeLSMCounts(e.Counts)}
	if e.Manifest != "" {
		props[SummaryLSMManifest] = e.Manifest
	}
	return &table.Snapshot{SnapshotID: e.SnapshotID, ParentSnapshotID: &parent, SequenceNumber: e.SequenceNumber,
		TimestampMs: e.TimestampMs, SchemaID: &schema,
		Summary: &table.Summary{Operation: table.Operation(e.Operation), Properties: props}}
}

// entryAt returns the loaded entry with sequence number seq (nil: none).
func (l *LSMLog) entryAt(seq int64) *LSMLogEntry {
	if l == nil {
		return nil
	}
	in := func(es []LSMLogEntry) *LSMLogEntry {
		i, ok := slices.BinarySearchFunc(es, seq, func(e LSMLogEntry, s int64) int { return cmp.Compare(e.SequenceNumber, s) })
		if !ok {
			return nil
		}
		return &es[i]
	}
	i, ok := slices.BinarySearchFunc(l.Segments, seq, func(sg LSMLogSegment, s int64) int {
		switch {
		case sg.LastSeq < s:
			return -1
		case sg.FirstSeq > s:
			return 1
		}
		return 0
	})
	if ok {
		return in(l.sealed[i])
	}
	return in(l.Tail)
}

// LSMLogs are the changelog logs a topic may still read from: the current
// one and the one it replaced, whose snapshots fetches located a moment
// before the index moved past them.
type LSMLogs []*LSMLog

// Snapshot looks id (sequence number seq) up in each log in turn (nil: in
// none).
func (ls LSMLogs) Snapshot(id, seq int64) *table.Snapshot {
	for _, l := range ls {
		if s := l.Snapshot(id, seq); s != nil {
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
	if err != nil || log == nil || log.Len() == 0 || len(main) == 0 {
		return main, err
	}
	first := meta.SnapshotByID(main[0].SnapshotID)
	last, _ := log.LastID()
	if first == nil || first.ParentSnapshotID == nil || *first.ParentSnapshotID != last {
		return main, nil
	}
	startID, _ := log.StartID()
	start := meta.SnapshotByID(startID)
	if start == nil {
		return nil, fmt.Errorf("the changelog log starts after snapshot %d, which is not in the table metadata (its checkpoint tag was removed?)", startID)
	}
	if !log.Loaded() {
		return nil, fmt.Errorf("the changelog log's segments are not loaded")
	}
	out := make([]SnapshotRef, 0, 1+log.Len()+len(main))
	ref := refOf(start)
	ref.LogStart = true
	out = append(out, ref)
	for e := range log.All() {
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
