package state

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/lakegw/lakegw/offsets"
)

// A compacted prefix written by ReplacePrefix (only what it replaces is
// deleted) reads back as the index holds it, also when empty segments
// share its base offset: a snapshot with no records in a partition right
// at the prefix's end, before and after it. The index is reopened from
// the SQLite store after every compaction and compared with the one that
// wrote it.
func TestCompactedPrefixReadsBackFromTheStore(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	s, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close() }()
	idx, err := offsets.Open(ctx, s, "ns.t", "u", 2)
	if err != nil {
		t.Fatal(err)
	}
	// Partition 1 has no records in snapshots 3, 4 and 6.
	counts := [][]int64{{4, 2}, {3, 1}, {2, 0}, {1, 0}, {5, 3}, {0, 0}, {2, 2}, {1, 1}}
	for i, c := range counts {
		if err := idx.Append(ctx, []offsets.Snapshot{{SnapshotID: int64(100 + i), SequenceNumber: int64(i + 1), TimestampMs: int64(i), Counts: c}}); err != nil {
			t.Fatal(err)
		}
	}
	reopened := func() *offsets.Index {
		t.Helper()
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if s, err = Open(ctx, path); err != nil {
			t.Fatal(err)
		}
		again, err := offsets.Open(ctx, s, "ns.t", "u", 2)
		if err != nil {
			t.Fatal(err)
		}
		return again
	}
	// Each step: snapshots through `through` expire and their live rows
	// (live) stand in for them. The second leaves partition 1's prefix
	// empty at the base of the empty segments after it.
	for _, step := range []struct {
		through int
		live    []int64
	}{{1, []int64{5, 2}}, {2, []int64{4, 0}}, {1, []int64{6, 0}}, {0, []int64{6, 0}}} {
		if err := idx.CompactPrefix(ctx, step.through, step.live); err != nil {
			t.Fatal(err)
		}
		want := idx.Snapshots()
		again := reopened()
		if got := again.Snapshots(); !reflect.DeepEqual(got, want) {
			t.Fatalf("after compacting through %d: reopened\n%+v\nwant\n%+v", step.through, got, want)
		}
		for p := int32(0); p < 2; p++ {
			if again.LogStart(p) != idx.LogStart(p) || again.HighWatermark(p) != idx.HighWatermark(p) {
				t.Fatalf("partition %d: reopened log start %d hwm %d, want %d %d",
					p, again.LogStart(p), again.HighWatermark(p), idx.LogStart(p), idx.HighWatermark(p))
			}
		}
		idx = again
	}
	if n := len(idx.Snapshots()); n != 4 {
		t.Fatalf("%d snapshots left, want the prefix and 3", n)
	}
}

// BenchmarkCompactPrefix prices one maintenance pass's index update: one
// snapshot expires into the compacted prefix while the topic retains
// `retained` snapshots (a day of commits a second is 86,400). Its cost must
// not grow with retained: the store drops what expired and keeps the rest.
func BenchmarkCompactPrefix(b *testing.B) {
	for _, retained := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("retained=%d", retained), func(b *testing.B) {
			ctx := context.Background()
			s, err := Open(ctx, filepath.Join(b.TempDir(), "state.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			idx, err := offsets.Open(ctx, s, "ns.t", "u", 1)
			if err != nil {
				b.Fatal(err)
			}
			snaps := make([]offsets.Snapshot, retained)
			for i := range snaps {
				snaps[i] = offsets.Snapshot{SnapshotID: int64(i + 1), SequenceNumber: int64(i + 1), Counts: []int64{3}}
			}
			if err := idx.Append(ctx, snaps); err != nil {
				b.Fatal(err)
			}
			next := int64(retained + 1)
			b.ResetTimer()
			for b.Loop() {
				if err := idx.Append(ctx, []offsets.Snapshot{{SnapshotID: next, SequenceNumber: next, Counts: []int64{3}}}); err != nil {
					b.Fatal(err)
				}
				next++
				if err := idx.CompactPrefix(ctx, 1, []int64{3}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
