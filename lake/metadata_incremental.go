package lake

import (
	"encoding/json"
	"iter"
	"maps"
	"slices"

	"github.com/apache/iceberg-go/table"
)

// incrementalMetadata is a table's metadata as MetadataReader parses it:
// iceberg-go's parse of everything but the snapshots (Metadata, whose
// snapshot list and log are empty), and the snapshots, their log, the refs
// and the current snapshot decoded by the reader. The snapshots are shared with the metadata of the
// table's earlier and later files: like every table.Metadata, it is
// immutable, and callers must not modify what it returns (iceberg-go
// clones its snapshots on every call; this does not, which is much of the
// point).
type incrementalMetadata struct {
	table.Metadata
	snapshots []table.Snapshot
	byID      map[int64]int
	refs      map[string]table.SnapshotRef
	current   *int64
	log       []table.SnapshotLogEntry
}

func (m *incrementalMetadata) SnapshotLogs() iter.Seq[table.SnapshotLogEntry] {
	return slices.Values(m.log)
}

func (m *incrementalMetadata) Snapshots() []table.Snapshot { return slices.Clone(m.snapshots) }

func (m *incrementalMetadata) SnapshotByID(id int64) *table.Snapshot {
	i, ok := m.byID[id]
	if !ok {
		return nil
	}
	s := m.snapshots[i]
	return &s
}

func (m *incrementalMetadata) SnapshotByName(name string) *table.Snapshot {
	ref, ok := m.refs[name]
	if !ok {
		return nil
	}
	return m.SnapshotByID(ref.SnapshotID)
}

func (m *incrementalMetadata) CurrentSnapshot() *table.Snapshot {
	if m.current == nil {
		return nil
	}
	return m.SnapshotByID(*m.current)
}

func (m *incrementalMetadata) Ref() table.SnapshotRef { return cloneRef(m.refs[table.MainBranch]) }

func (m *incrementalMetadata) Refs() iter.Seq2[string, table.SnapshotRef] {
	return func(yield func(string, table.SnapshotRef) bool) {
		for name, ref := range m.refs {
			if !yield(name, cloneRef(ref)) {
				return
			}
		}
	}
}

// MarshalJSON writes the metadata file the metadata was read from (its
// members in another order): what iceberg-go writes of the rest, with the
// members the reader decoded itself.
func (m *incrementalMetadata) MarshalJSON() ([]byte, error) {
	rest, err := json.Marshal(m.Metadata)
	if err != nil {
		return nil, err
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(rest, &doc); err != nil {
		return nil, err
	}
	set := func(key string, v any) error {
		b, err := json.Marshal(v)
		doc[key] = b
		return err
	}
	// A nil list was null or absent in the file: what iceberg-go writes
	// of its own empty list stands.
	if m.snapshots != nil {
		if err := set("snapshots", m.snapshots); err != nil {
			return nil, err
		}
	}
	if m.log != nil {
		if err := set("snapshot-log", m.log); err != nil {
			return nil, err
		}
	}
	if err := set("refs", m.refs); err != nil {
		return nil, err
	}
	if m.current != nil {
		if err := set("current-snapshot-id", *m.current); err != nil {
			return nil, err
		}
	}
	return json.Marshal(doc)
}

// Equals compares with another file's metadata as read by a MetadataReader
// (iceberg-go's own metadata types compare only with themselves, too).
func (m *incrementalMetadata) Equals(other table.Metadata) bool {
	o, ok := other.(*incrementalMetadata)
	if !ok {
		return false
	}
	if m == o {
		return true
	}
	return m.Metadata.Equals(o.Metadata) &&
		slices.EqualFunc(m.snapshots, o.snapshots, table.Snapshot.Equals) && slices.Equal(m.log, o.log) &&
		maps.EqualFunc(m.refs, o.refs, sameRef) &&
		(m.current == nil) == (o.current == nil) && (m.current == nil || *m.current == *o.current)
}

func sameRef(a, b table.SnapshotRef) bool {
	return a.SnapshotID == b.SnapshotID && a.SnapshotRefType == b.SnapshotRefType &&
		samePtr(a.MinSnapshotsToKeep, b.MinSnapshotsToKeep) && samePtr(a.MaxSnapshotAgeMs, b.MaxSnapshotAgeMs) &&
		samePtr(a.MaxRefAgeMs, b.MaxRefAgeMs)
}

func samePtr[T comparable](a, b *T) bool {
	return a == b || a != nil && b != nil && *a == *b
}

// cloneRef copies a ref's optional fields, as iceberg-go's metadata does
// for every ref it returns.
func cloneRef(r table.SnapshotRef) table.SnapshotRef {
	if p := r.MinSnapshotsToKeep; p != nil {
		v := *p
		r.MinSnapshotsToKeep = &v
	}
	if p := r.MaxSnapshotAgeMs; p != nil {
		v := *p
		r.MaxSnapshotAgeMs = &v
	}
	if p := r.MaxRefAgeMs; p != nil {
		v := *p
		r.MaxRefAgeMs = &v
	}
	return r
}
