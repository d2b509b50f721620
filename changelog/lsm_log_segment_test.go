package changelog

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	icebergio "github.com/apache/iceberg-go/io"
)

// A log that lives through many expiries: each appends entries, seals
// full tails into segments and cuts its front at a random sequence
// number, mid-segment or not. After every step the log read back from
// its files, fresh or reusing the previous read's segments, holds exactly
// the model's entries; segments only the previous read holds are not
// read again.
func TestLSMLogSegmentsModel(t *testing.T) {
	dir := t.TempDir()
	fs := icebergio.LocalFS{}
	const buckets, segEntries = 2, 5
	rng := rand.New(rand.NewPCG(3, 5))
	entry := func(seq int64) LSMLogEntry {
		return LSMLogEntry{SnapshotID: 1000 + seq, ParentID: 999 + seq, SequenceNumber: seq, TimestampMs: seq * 10,
			Counts: []int64{seq % 3, 1}, Bytes: seq, Manifest: fmt.Sprintf("m-%d.json", seq)}
	}
	var model []LSMLogEntry
	log := &LSMLog{Buckets: buckets}
	var prev *LSMLog
	nextSeq, files := int64(1), 0
	for step := range 200 {
		var add []LSMLogEntry
		for range rng.IntN(9) {
			add = append(add, entry(nextSeq))
			nextSeq++
		}
		if err := log.Append(add); err != nil {
			t.Fatal(err)
		}
		model = append(model, add...)
		if len(model) > 0 && rng.IntN(3) == 0 {
			cut := model[rng.IntN(len(model))].SequenceNumber
			gone, dropped, err := log.DropThrough(fs, cut)
			if err != nil {
				t.Fatal(err)
			}
			k := 0
			for k < len(model) && model[k].SequenceNumber <= cut {
				k++
			}
			if !entriesEqual(gone, model[:k]) {
				t.Fatalf("step %d: cut through %d dropped %v, want %v", step, cut, ids(gone), ids(model[:k]))
			}
			model = model[k:]
			for _, p := range dropped {
				if slices.ContainsFunc(log.Segments, func(sg LSMLogSegment) bool { return sg.Path == p }) {
					t.Fatalf("step %d: segment %s dropped and still in the log", step, p)
				}
			}
		}
		for len(log.Tail) >= segEntries {
			files++
			path := filepath.Join(dir, fmt.Sprintf("seg-%d.json", files))
			body, err := log.Seal(segEntries, path)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, body, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if !entriesEqual(collect(log), model) {
			t.Fatalf("step %d: log holds %v, want %v", step, ids(collect(log)), ids(model))
		}
		head, err := EncodeLSMLog(*log)
		if err != nil {
			t.Fatal(err)
		}
		headPath := filepath.Join(dir, fmt.Sprintf("head-%d.json", step))
		if err := os.WriteFile(headPath, head, 0o644); err != nil {
			t.Fatal(err)
		}
		fresh, err := ReadLSMLog(fs, headPath, nil)
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if !entriesEqual(collect(fresh), model) || fresh.Len() != len(model) {
			t.Fatalf("step %d: read back %v, want %v", step, ids(collect(fresh)), ids(model))
		}
		if len(model) > 0 {
			if s, _ := fresh.StartID(); s != model[0].ParentID {
				t.Fatalf("step %d: starts after %d, want %d", step, s, model[0].ParentID)
			}
			if l, _ := fresh.LastID(); l != model[len(model)-1].SnapshotID {
				t.Fatalf("step %d: last %d, want %d", step, l, model[len(model)-1].SnapshotID)
			}
		}
		if prev != nil {
			// Hide the files of the segments prev holds: a reuse that
			// reads them again fails.
			var hidden []string
			for _, sg := range prev.Segments {
				if slices.ContainsFunc(log.Segments, func(s LSMLogSegment) bool { return s.Path == sg.Path }) {
					if err := os.Rename(sg.Path, sg.Path+".hidden"); err != nil {
						t.Fatal(err)
					}
					hidden = append(hidden, sg.Path)
				}
			}
			reused, err := ReadLSMLog(fs, headPath, prev)
			if err != nil {
				t.Fatalf("step %d: reading with the previous log's segments: %v", step, err)
			}
			if !entriesEqual(collect(reused), model) {
				t.Fatalf("step %d: reusing read %v, want %v", step, ids(collect(reused)), ids(model))
			}
			for _, p := range hidden {
				if err := os.Rename(p+".hidden", p); err != nil {
					t.Fatal(err)
				}
			}
		}
		for _, e := range model {
			s := fresh.Snapshot(e.SnapshotID, e.SequenceNumber)
			if s == nil || s.SnapshotID != e.SnapshotID || s.Summary.Properties[SummaryLSMManifest] != e.Manifest {
				t.Fatalf("step %d: snapshot %d (sequence number %d) looked up as %+v", step, e.SnapshotID, e.SequenceNumber, s)
			}
			if s := fresh.Snapshot(e.SnapshotID+1, e.SequenceNumber); s != nil {
				t.Fatalf("step %d: sequence number %d found under the wrong id %d", step, e.SequenceNumber, e.SnapshotID+1)
			}
		}
		for _, seq := range []int64{0, nextSeq} {
			if len(model) > 0 && seq == 0 {
				seq = model[0].SequenceNumber - 1
			}
			if s := fresh.Snapshot(1000+seq, seq); s != nil {
				t.Fatalf("step %d: sequence number %d is not in the log, found %d", step, seq, s.SnapshotID)
			}
		}
		prev = fresh
		var n int64
		for _, e := range model {
			if e.SequenceNumber > nextSeq/2 {
				n += e.Bytes
			}
		}
		if b := fresh.BytesAfter(nextSeq / 2); b > n || b < n-int64(segEntries)*nextSeq {
			t.Fatalf("step %d: %d bytes after %d, exactly %d (at most a segment less)", step, b, nextSeq/2, n)
		}
	}
	if files < 20 {
		t.Fatalf("only %d segments sealed: the model proves little", files)
	}
}

// A head or segment that does not say what it holds is an error naming
// the file, never a log with holes.
func TestLSMLogSegmentDamage(t *testing.T) {
	dir := t.TempDir()
	fs := icebergio.LocalFS{}
	log := &LSMLog{Buckets: 1}
	var es []LSMLogEntry
	for seq := int64(1); seq <= 6; seq++ {
		es = append(es, LSMLogEntry{SnapshotID: 100 + seq, ParentID: 99 + seq, SequenceNumber: seq, Counts: []int64{1}})
	}
	if err := log.Append(es); err != nil {
		t.Fatal(err)
	}
	seg := filepath.Join(dir, "seg.json")
	body, err := log.Seal(4, seg)
	if err != nil {
		t.Fatal(err)
	}
	head, err := EncodeLSMLog(*log)
	if err != nil {
		t.Fatal(err)
	}
	headPath := filepath.Join(dir, "head.json")
	write := func(p string, b []byte) {
		t.Helper()
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(headPath, head)
	for _, tc := range []struct {
		name, head, seg, want string
	}{
		{"segment missing", string(head), "", "seg.json"},
		{"segment truncated", string(head), string(body[:len(body)/2]), "decode changelog log segment"},
		{"segment of other entries", string(head), strings.Replace(string(body), `"snapshot-id":104`, `"snapshot-id":777`, 1), "seg.json"},
		{"head skips past the file", strings.Replace(string(head), `"count":4`, `"count":5`, 1), string(body), "holds 4 entries"},
		{"tail does not follow the segment", strings.Replace(string(head), `"parent-snapshot-id":104`, `"parent-snapshot-id":5`, 1), string(body), "not the last segment's"},
		{"old version with segments", strings.Replace(string(head), `"version":2`, `"version":1`, 1), string(body), "version 1 has segments"},
	} {
		write(headPath, []byte(tc.head))
		os.Remove(seg)
		if tc.seg != "" {
			write(seg, []byte(tc.seg))
		}
		_, err := ReadLSMLog(fs, headPath, nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
	// A version 1 log (all entries, no segments) still reads.
	v1 := `{"version":1,"buckets":1,"entries":[{"snapshot-id":101,"parent-snapshot-id":100,"sequence-number":1,"counts":[1]}]}`
	write(headPath, []byte(v1))
	l, err := ReadLSMLog(fs, headPath, nil)
	if err != nil || l.Len() != 1 {
		t.Fatalf("version 1 log: %v, %d entries", err, l.Len())
	}
}

func collect(l *LSMLog) []LSMLogEntry {
	var out []LSMLogEntry
	for e := range l.All() {
		out = append(out, *e)
	}
	return out
}

func entriesEqual(a, b []LSMLogEntry) bool {
	return slices.EqualFunc(a, b, func(x, y LSMLogEntry) bool {
		return x.SnapshotID == y.SnapshotID && x.ParentID == y.ParentID && x.SequenceNumber == y.SequenceNumber &&
			slices.Equal(x.Counts, y.Counts) && x.Bytes == y.Bytes && x.Manifest == y.Manifest
	})
}

func ids(es []LSMLogEntry) []int64 {
	out := make([]int64, len(es))
	for i, e := range es {
		out[i] = e.SnapshotID
	}
	return out
}
