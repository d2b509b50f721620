package changelog

import (
	"encoding/json"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"strings"

	icebergio "github.com/apache/iceberg-go/io"

	"github.com/lakegw/lakegw/lake"
)

const (
	// PropLSMLogSegmentEntries is the table property bounding how many
	// entries one sealed segment of the changelog log holds: what an
	// expiry rewrites at most, and a reader loads at a time.
	PropLSMLogSegmentEntries = "lakegw.lsm.changelog-log.segment-entries"
	// DefaultLSMLogSegmentEntries is about an hour of one commit a second:
	// a head of ~1 MB, and a week of retention in ~170 segments.
	DefaultLSMLogSegmentEntries = 4096
)

// LSMLogSegment describes a sealed segment of the changelog log: a file of
// consecutive entries, written once. The head carries what the log's
// chain, the retention checks and a seek by sequence number need without
// opening it.
type LSMLogSegment struct {
	Path string `json:"path"`
	// Skip is how many entries at the front of the file have left the
	// log: truncating a segment rewrites its description, not the file.
	Skip          int   `json:"skip,omitempty"`
	Count         int   `json:"count"`
	FirstParentID int64 `json:"first-parent-snapshot-id"`
	FirstSeq      int64 `json:"first-sequence-number"`
	LastID        int64 `json:"last-snapshot-id"`
	LastSeq       int64 `json:"last-sequence-number"`
	// Bytes is the sum of its entries' Bytes.
	Bytes int64 `json:"bytes"`
}

func (sg LSMLogSegment) check() error {
	if sg.Path == "" || sg.Skip < 0 || sg.Count < 1 || sg.LastSeq < sg.FirstSeq || sg.Bytes < 0 {
		return fmt.Errorf("malformed segment %+v", sg)
	}
	return nil
}

// lsmLogSegmentFile is a segment on disk.
type lsmLogSegmentFile struct {
	Version int           `json:"version"`
	Buckets int           `json:"buckets"`
	Entries []LSMLogEntry `json:"entries"`
}

// SealLSMLogSegment renders entries (one chain, oldest first) as a segment
// file to write at path, and returns its description for the head.
func SealLSMLogSegment(path string, buckets int, entries []LSMLogEntry) (LSMLogSegment, []byte, error) {
	if len(entries) == 0 {
		return LSMLogSegment{}, nil, fmt.Errorf("seal an empty changelog log segment")
	}
	if err := checkEntries(entries, buckets); err != nil {
		return LSMLogSegment{}, nil, fmt.Errorf("changelog log segment %s: %w", path, err)
	}
	sg := LSMLogSegment{Path: path, Count: len(entries), FirstParentID: entries[0].ParentID, FirstSeq: entries[0].SequenceNumber,
		LastID: entries[len(entries)-1].SnapshotID, LastSeq: entries[len(entries)-1].SequenceNumber}
	for _, e := range entries {
		sg.Bytes += e.Bytes
	}
	body, err := json.Marshal(lsmLogSegmentFile{Version: lsmLogVersion, Buckets: buckets, Entries: entries})
	if err != nil {
		return LSMLogSegment{}, nil, fmt.Errorf("encode changelog log segment %s: %w", path, err)
	}
	return sg, body, nil
}

// Segment returns the entries of segment i, reading and checking its file
// the first time.
func (l *LSMLog) Segment(fs icebergio.IO, i int) ([]LSMLogEntry, error) {
	if i < 0 || i >= len(l.Segments) {
		return nil, fmt.Errorf("changelog log has no segment %d", i)
	}
	if l.sealed[i] != nil {
		return l.sealed[i], nil
	}
	sg := l.Segments[i]
	data, err := lake.ReadFile(fs, sg.Path)
	if err != nil {
		return nil, fmt.Errorf("changelog log segment: %w", err)
	}
	var f lsmLogSegmentFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("decode changelog log segment %s: %w", sg.Path, err)
	}
	if f.Version != lsmLogVersion || f.Buckets != l.Buckets {
		return nil, fmt.Errorf("changelog log segment %s: version %d with %d buckets, want version %d with %d",
			sg.Path, f.Version, f.Buckets, lsmLogVersion, l.Buckets)
	}
	if err := checkEntries(f.Entries, l.Buckets); err != nil {
		return nil, fmt.Errorf("changelog log segment %s: %w", sg.Path, err)
	}
	if len(f.Entries) != sg.Skip+sg.Count {
		return nil, fmt.Errorf("changelog log segment %s holds %d entries, the log's head says %d", sg.Path, len(f.Entries), sg.Skip+sg.Count)
	}
	es := f.Entries[sg.Skip:]
	if es[0].ParentID != sg.FirstParentID || es[0].SequenceNumber != sg.FirstSeq ||
		es[len(es)-1].SnapshotID != sg.LastID || es[len(es)-1].SequenceNumber != sg.LastSeq {
		return nil, fmt.Errorf("changelog log segment %s does not hold what the log's head says of it", sg.Path)
	}
	l.sealed[i] = es
	return es, nil
}

// ParseLSMLogSegmentEntries reads PropLSMLogSegmentEntries from table
// properties (DefaultLSMLogSegmentEntries when unset).
func ParseLSMLogSegmentEntries(props map[string]string) (int, error) {
	v, ok := props[PropLSMLogSegmentEntries]
	if !ok {
		return DefaultLSMLogSegmentEntries, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 1 {
		return 0, fmt.Errorf("table property %s=%q: want a whole number of entries, at least 1", PropLSMLogSegmentEntries, v)
	}
	return n, nil
}

// DropThrough removes the entries with sequence numbers up to seq from the
// front of the log, loading only the segments it drops or cuts. It returns
// the removed entries (whose changelog the caller deletes) and the files
// of the segments dropped whole. A cut segment keeps its file.
func (l *LSMLog) DropThrough(fs icebergio.IO, seq int64) (gone []LSMLogEntry, files []string, err error) {
	n := 0
	for n < len(l.Segments) && l.Segments[n].FirstSeq <= seq {
		es, err := l.Segment(fs, n)
		if err != nil {
			return nil, nil, err
		}
		k := 0
		for k < len(es) && es[k].SequenceNumber <= seq {
			k++
		}
		gone = append(gone, es[:k]...)
		if k < len(es) {
			sg := &l.Segments[n]
			sg.Skip += k
			sg.Count -= k
			sg.FirstParentID, sg.FirstSeq = es[k].ParentID, es[k].SequenceNumber
			for _, e := range es[:k] {
				sg.Bytes -= e.Bytes
			}
			l.sealed[n] = es[k:]
			break
		}
		files = append(files, l.Segments[n].Path)
		n++
	}
	l.Segments = l.Segments[n:]
	l.sealed = l.sealed[n:]
	if len(l.Segments) > 0 {
		return gone, files, nil
	}
	k := 0
	for k < len(l.Tail) && l.Tail[k].SequenceNumber <= seq {
		k++
	}
	gone = append(gone, l.Tail[:k]...)
	l.Tail = l.Tail[k:]
	return gone, files, nil
}

// Append adds entries (one chain, oldest first) after the log's last.
func (l *LSMLog) Append(es []LSMLogEntry) error {
	if len(es) == 0 {
		return nil
	}
	if err := checkEntries(es, l.Buckets); err != nil {
		return fmt.Errorf("append to the changelog log: %w", err)
	}
	if last, ok := l.LastID(); ok && es[0].ParentID != last {
		return fmt.Errorf("append to the changelog log: entry %d has parent %d, not the log's last %d", es[0].SnapshotID, es[0].ParentID, last)
	}
	l.Tail = append(l.Tail, es...)
	return nil
}

// Seal moves the first n tail entries into a new segment to be written at
// path, and returns the segment file's body.
func (l *LSMLog) Seal(n int, path string) ([]byte, error) {
	if n < 1 || n > len(l.Tail) {
		return nil, fmt.Errorf("seal %d of %d changelog log tail entries", n, len(l.Tail))
	}
	es := slices.Clone(l.Tail[:n])
	sg, body, err := SealLSMLogSegment(path, l.Buckets, es)
	if err != nil {
		return nil, err
	}
	l.Segments = append(l.Segments, sg)
	l.sealed = append(l.sealed, es)
	l.Tail = slices.Clone(l.Tail[n:])
	return body, nil
}

// SameHead reports whether two logs name the same segments and tail
// entries: rewriting one as the other would change nothing a reader sees.
func SameHead(a, b *LSMLog) bool {
	if !slices.Equal(a.Segments, b.Segments) || len(a.Tail) != len(b.Tail) {
		return false
	}
	for i := range a.Tail {
		if a.Tail[i].SnapshotID != b.Tail[i].SnapshotID {
			return false
		}
	}
	return true
}

// Clone returns a copy of the log's head that DropThrough, Append and
// Seal on either leave the other unchanged (loaded entries are shared,
// never written).
func (l *LSMLog) Clone() *LSMLog {
	c := *l
	c.Segments = slices.Clone(l.Segments)
	c.sealed = slices.Clone(l.sealed)
	c.Tail = slices.Clone(l.Tail)
	c.Dropped = slices.Clone(l.Dropped)
	return &c
}

// Loaded reports whether every segment's entries are in memory (All
// yields them all).
func (l *LSMLog) Loaded() bool {
	for _, es := range l.sealed {
		if es == nil {
			return false
		}
	}
	return true
}

// Len is the number of entries in the log.
func (l *LSMLog) Len() int {
	if l == nil {
		return 0
	}
	n := len(l.Tail)
	for _, sg := range l.Segments {
		n += sg.Count
	}
	return n
}

// StartID is the parent of the log's first entry: the checkpoint it
// starts after.
func (l *LSMLog) StartID() (int64, bool) {
	switch {
	case len(l.Segments) > 0:
		return l.Segments[0].FirstParentID, true
	case len(l.Tail) > 0:
		return l.Tail[0].ParentID, true
	}
	return 0, false
}

// LastID is the log's newest entry: the parent of the main branch's
// oldest snapshot when the log was written.
func (l *LSMLog) LastID() (int64, bool) {
	switch {
	case len(l.Tail) > 0:
		return l.Tail[len(l.Tail)-1].SnapshotID, true
	case len(l.Segments) > 0:
		return l.Segments[len(l.Segments)-1].LastID, true
	}
	return 0, false
}

// All yields the entries of the loaded segments, then the tail, oldest
// first. On a log read with ReadLSMLog that is every entry.
func (l *LSMLog) All() iter.Seq[*LSMLogEntry] {
	return func(yield func(*LSMLogEntry) bool) {
		if l == nil {
			return
		}
		for _, es := range l.sealed {
			for i := range es {
				if !yield(&es[i]) {
					return
				}
			}
		}
		for i := range l.Tail {
			if !yield(&l.Tail[i]) {
				return
			}
		}
	}
}

// BytesAfter is the size of the changelog logged after sequence number
// seq, counting only whole segments after it and the tail entries after
// it: at most one segment less than the exact figure, so a retention.bytes
// bound built on it never drops changes inside the bound.
func (l *LSMLog) BytesAfter(seq int64) int64 {
	var n int64
	for _, sg := range l.Segments {
		if sg.FirstSeq > seq {
			n += sg.Bytes
		}
	}
	for _, e := range l.Tail {
		if e.SequenceNumber > seq {
			n += e.Bytes
		}
	}
	return n
}
