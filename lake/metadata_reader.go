package lake

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"slices"
	"sync"

	"github.com/apache/iceberg-go/table"
)

// MetadataReader parses the successive metadata files of one table, each
// one in time proportional to what changed since the previous: a streaming
// table's metadata file lists every retained snapshot (an hour of them at a
// commit a second is 3,600), and re-parsing them all at every commit made
// the cost of following a table grow with its retention. The reader keeps
// the snapshots of the last file it parsed, keyed by a 128-bit hash of
// their JSON, and decodes only the snapshots it has not seen; everything
// else in the file (schemas, specs, properties, the metadata log) goes
// through iceberg-go's own parser, with the snapshot list, the snapshot
// log, the refs and the current snapshot id cut out of the document; what
// the reader decodes itself it checks as iceberg-go does. Safe for
// concurrent use.
type MetadataReader struct {
	mu sync.Mutex
	// last holds the snapshots of the last file read, and known their
	// positions in it by their JSON.
	last  []table.Snapshot
	known map[snapshotJSON]int
	// knownLog holds the snapshot log entries of the last file, keyed
	// likewise.
	knownLog map[snapshotJSON]table.SnapshotLogEntry
	// decoded counts the snapshots decoded (not reused) so far.
	decoded int64
}

// Decoded is how many snapshots the reader has decoded: following a table,
// each snapshot once.
func (r *MetadataReader) Decoded() int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.decoded
}

// snapshotJSON identifies the JSON text of one snapshot (or snapshot log
// entry): its length and two
// independently seeded 64-bit hashes (a false match needs both to collide).
type snapshotJSON struct {
	size int
	hash [2]uint64
}

var snapshotSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

func snapshotJSONOf(b []byte) snapshotJSON {
	return snapshotJSON{len(b), [2]uint64{maphash.Bytes(snapshotSeeds[0], b), maphash.Bytes(snapshotSeeds[1], b)}}
}

// NewMetadataReader returns a reader that has seen no file yet.
func NewMetadataReader() *MetadataReader { return &MetadataReader{} }

// Parse parses one metadata file of the table, as table.ParseMetadataBytes
// does. A document it cannot split (malformed, a member given twice or in
// another letter case, which encoding/json would merge), and a format v1
// file, whose snapshots can be written in older forms, get a full parse.
func (r *MetadataReader) Parse(doc []byte) (table.Metadata, error) {
	parts, ok := splitMetadata(doc)
	if !ok {
		return table.ParseMetadataBytes(doc)
	}
	base, err := table.ParseMetadataBytes(parts.rest)
	if err != nil {
		return nil, err
	}
	if base.Version() < 2 {
		return table.ParseMetadataBytes(doc)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	m := &incrementalMetadata{Metadata: base, byID: make(map[int64]int, len(r.last)+1)}
	if doc[parts.cut[cutSnapshots].start] == '[' {
		// iceberg-go tells an empty list from null
		m.snapshots = make([]table.Snapshot, 0, len(r.last)+1)
	}
	known := make(map[snapshotJSON]int, len(r.known)+1)
	err = arrayElements(doc, parts.cut[cutSnapshots], func(s span) error {
		raw := doc[s.start:s.end]
		key := snapshotJSONOf(raw)
		var snap table.Snapshot
		if i, seen := r.known[key]; seen {
			snap = r.last[i]
		} else if err := json.Unmarshal(raw, &snap); err != nil {
			return fmt.Errorf("%w: snapshot %d: %w", table.ErrInvalidMetadata, len(m.snapshots), err)
		} else {
			r.decoded++
		}
		known[key] = len(m.snapshots)
		if _, dup := m.byID[snap.SnapshotID]; dup {
			return fmt.Errorf("%w: duplicate snapshot ID %d", table.ErrInvalidMetadata, snap.SnapshotID)
		}
		m.byID[snap.SnapshotID] = len(m.snapshots)
		m.snapshots = append(m.snapshots, snap)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if err := m.decodeRefs(doc, parts); err != nil {
		return nil, err
	}
	knownLog, err := m.decodeLog(doc, parts.cut[cutSnapshotLog], r.knownLog)
	if err != nil {
		return nil, err
	}
	r.last, r.known, r.knownLog = m.snapshots, known, knownLog
	return m, nil
}

// decodeLog decodes the snapshot log (entries already in known are not
// decoded again) and checks it as iceberg-go does: no entry more than a
// minute before the one it follows, the last no more than a minute after
// the metadata's last update. It returns the entries by their JSON text's hash.
func (m *incrementalMetadata) decodeLog(doc []byte, s span, known map[snapshotJSON]table.SnapshotLogEntry) (map[snapshotJSON]table.SnapshotLogEntry, error) {
	const minuteMs = 60_000
	next := make(map[snapshotJSON]table.SnapshotLogEntry, len(known)+1)
	if s.end == 0 {
		return next, nil
	}
	m.log = make([]table.SnapshotLogEntry, 0, len(known)+1)
	err := arrayElements(doc, s, func(e span) error {
		raw := doc[e.start:e.end]
		key := snapshotJSONOf(raw)
		entry, seen := known[key]
		if !seen {
			if err := json.Unmarshal(raw, &entry); err != nil {
				return fmt.Errorf("%w: snapshot-log entry %d: %w", table.ErrInvalidMetadata, len(m.log), err)
			}
		}
		next[key] = entry
		if n := len(m.log); n > 0 && entry.TimestampMs-m.log[n-1].TimestampMs < -minuteMs {
			return fmt.Errorf("%w: expected sorted snapshot log entries", table.ErrInvalidMetadata)
		}
		m.log = append(m.log, entry)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if n := len(m.log); n > 0 && m.LastUpdatedMillis()-m.log[n-1].TimestampMs < -minuteMs {
		return nil, fmt.Errorf("%w: invalid update timestamp %d: before last snapshot log entry at %d",
			table.ErrInvalidMetadata, m.LastUpdatedMillis(), m.log[n-1].TimestampMs)
	}
	return next, nil
}

// metadataParts is a metadata file split for Parse: the spans of the
// members it decodes itself (an absent member's span is empty) and the rest
// of the document, with those members' values emptied.
type metadataParts struct {
	cut  [len(cutMembers)]span
	rest []byte
}

// cutMembers are the members Parse decodes itself, by their index in
// metadataParts.cut, with what the document iceberg-go parses holds
// instead.
var cutMembers = [...]struct{ name, with string }{
	{"snapshots", "[]"}, {"snapshot-log", "[]"}, {"refs", "{}"}, {"current-snapshot-id", "null"},
}

const (
	cutSnapshots = iota
	cutSnapshotLog
	cutRefs
	cutCurrent
)

func splitMetadata(doc []byte) (metadataParts, bool) {
	var p metadataParts
	var seen [len(cutMembers)]int
	end, err := objectMembers(doc, 0, func(key []byte, v span) {
		for i, m := range cutMembers {
			if !bytes.EqualFold(key, []byte(m.name)) {
				continue
			}
			seen[i]++
			if string(key) != m.name {
				seen[i]++ // another case: leave the merging to encoding/json
			}
			p.cut[i] = v
		}
	})
	if err != nil || len(bytes.TrimSpace(doc[end:])) != 0 || p.cut[cutSnapshots].end == 0 {
		return p, false
	}
	for _, n := range seen {
		if n > 1 {
			return p, false
		}
	}
	order := []int{0, 1, 2, 3}
	slices.SortFunc(order, func(a, b int) int { return p.cut[a].start - p.cut[b].start })
	size := len(doc)
	for i, s := range p.cut {
		if s.end != 0 {
			size += len(cutMembers[i].with) - (s.end - s.start)
		}
	}
	rest := make([]byte, 0, size)
	at := 0
	for _, i := range order {
		s := p.cut[i]
		if s.end == 0 {
			continue
		}
		rest = append(rest, doc[at:s.start]...)
		rest = append(rest, cutMembers[i].with...)
		at = s.end
	}
	p.rest = append(rest, doc[at:]...)
	return p, true
}

// decodeRefs decodes the refs and current snapshot id and checks them as
// iceberg-go does: a current snapshot id of -1 means none, the main branch
// follows the current snapshot, and every ref names a listed snapshot.
func (m *incrementalMetadata) decodeRefs(doc []byte, p metadataParts) error {
	if s := p.cut[cutRefs]; s.end != 0 {
		if err := json.Unmarshal(doc[s.start:s.end], &m.refs); err != nil {
			return fmt.Errorf("%w: refs: %w", table.ErrInvalidMetadata, err)
		}
	}
	if s := p.cut[cutCurrent]; s.end != 0 {
		if err := json.Unmarshal(doc[s.start:s.end], &m.current); err != nil {
			return fmt.Errorf("%w: current-snapshot-id: %w", table.ErrInvalidMetadata, err)
		}
	}
	if m.current != nil && *m.current == -1 {
		m.current = nil
	}
	if m.refs == nil {
		m.refs = map[string]table.SnapshotRef{}
	}
	main, hasMain := m.refs[table.MainBranch]
	switch {
	case m.current != nil && !hasMain:
		m.refs[table.MainBranch] = table.SnapshotRef{SnapshotID: *m.current, SnapshotRefType: table.BranchRef}
	case m.current != nil && main.SnapshotID != *m.current:
		return fmt.Errorf("%w: main branch snapshot ID %d does not match current snapshot ID %d",
			table.ErrInvalidMetadata, main.SnapshotID, *m.current)
	case m.current == nil && hasMain:
		return fmt.Errorf("%w: main branch snapshot exists, but current snapshot ID is nil", table.ErrInvalidMetadata)
	}
	for name, ref := range m.refs {
		if _, ok := m.byID[ref.SnapshotID]; !ok {
			return fmt.Errorf("%w: snapshot ref %s with ID %d does not exist in snapshot list",
				table.ErrInvalidMetadata, name, ref.SnapshotID)
		}
	}
	return nil
}
