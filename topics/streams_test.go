package topics

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/changelog"
	"github.com/lakegw/lakegw/derive"
	"github.com/lakegw/lakegw/offsets"
)

// idsOf returns the id column of c's records, in order.
func idsOf(t *testing.T, c *changelog.Changes) []int64 {
	t.Helper()
	out := make([]int64, len(c.Records))
	for i, r := range c.Records {
		out[i] = c.Batches[r.After.Batch].Column(0).(*array.Int64).Value(int(r.After.Row))
	}
	return out
}

// startStreamingRegistry starts a registry that streams every segment of
// more than 4 records, in chunks of 4 (batches of 2).
func startStreamingRegistry(t *testing.T) *fixture {
	t.Helper()
	return startRegistrySetUp(t, t.TempDir(), func(c catalog.Catalog) catalog.Catalog { return c },
		func(r *Registry, _ catalog.Catalog) {
			r.cfg.IndexDeriveMaxRecords = 2
			r.cfg.StreamChunkRecords = 3 // whole batches of 2: chunks of 4
			r.cfg.Defaults.BatchRecords = 2
		})
}

// A large append is read chunk by chunk, each chunk holding the records
// the index gives its offsets and dropped once its last batch is encoded;
// a large snapshot that is not an append is derived whole.
func TestLargeAppendIsStreamedInChunks(t *testing.T) {
	f := startStreamingRegistry(t)
	ctx := context.Background()
	ident := table.Identifier{"ns", "big"}
	createTable(t, f, ident)
	appendIDs(t, f.cat, ident, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20)
	waitFor(t, "11 records", func() bool { tp, ok := f.reg.Topic("ns.big"); return ok && tp.Index.HighWatermark(0) == 11 })
	tp, _ := f.reg.Topic("ns.big")
	seg, _ := tp.Index.Locate(0, 0)
	enc := tp.Encoding()
	if got := tp.streamChunk(seg); got != 4 {
		t.Fatalf("chunk of an 11-record append: %d, want 4", got)
	}
	// In order, then back and forth.
	for _, first := range []int64{0, 2, 4, 6, 8, 10, 4, 0, 10} {
		c, base, err := tp.ChangesAt(ctx, seg, enc, first)
		if err != nil {
			t.Fatal(err)
		}
		if want := first - first%4; base != want {
			t.Fatalf("record %d: chunk from %d, want %d", first, base, want)
		}
		ids := idsOf(t, c)
		if want := min(4, 11-base); int64(len(ids)) != want {
			t.Fatalf("chunk at %d: %d records, want %d", base, len(ids), want)
		}
		for i, id := range ids {
			if id != 10+base+int64(i) {
				t.Fatalf("chunk at %d: record %d is id %d, want %d", base, i, id, 10+base+int64(i))
			}
		}
	}
	key := tp.changesKey(seg.SnapshotID, seg.Kind, enc)
	if _, ok := tp.changes.Get(key); ok {
		t.Fatal("the large append was derived whole")
	}
	chunk := key
	chunk.chunk = 2
	if _, ok := tp.changes.Get(chunk); !ok {
		t.Fatal("chunk [4, 8) is not cached after it was read")
	}
	tp.Encoded(seg, enc, 6)
	if _, ok := tp.changes.Get(chunk); !ok {
		t.Fatal("chunk [4, 8) dropped before its last batch was encoded")
	}
	tp.Encoded(seg, enc, 8)
	if _, ok := tp.changes.Get(chunk); ok {
		t.Fatal("chunk [4, 8) kept after its last batch was encoded")
	}

	// A delete of seven rows is as large, but no append: its records
	// come derived whole.
	tbl, err := f.cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.Delete(ctx, iceberg.LessThan(iceberg.Reference("id"), int64(17)), nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the delete's records", func() bool { return tp.Index.HighWatermark(0) > 11 })
	del, _ := tp.Index.Locate(0, 11)
	if del.Kind != offsets.KindChanges || del.Count != 7 || tp.streamChunk(del) == 0 {
		t.Fatalf("the delete indexed as %+v, want 7 records, as large as a streamed append", del)
	}
	c, base, err := tp.ChangesAt(ctx, del, enc, 0)
	if err != nil {
		t.Fatal(err)
	}
	if base != 0 || int64(len(c.Records)) != del.Count {
		t.Fatalf("the delete read from %d with %d records, want it whole (%d)", base, len(c.Records), del.Count)
	}
	if _, ok := tp.changes.Get(tp.changesKey(del.SnapshotID, del.Kind, enc)); !ok {
		t.Fatal("the delete was not cached whole")
	}
	// It is planned once: later reads find it whole.
	if _, base, err := tp.ChangesAt(ctx, del, enc, 2); err != nil || base != 0 {
		t.Fatalf("second read of the delete: base %d, %v", base, err)
	}
}

// A large compacted prefix is counted without being held and streamed in
// chunks of live rows (OpRead) when a fetch reads it: the table's history
// expires under a streaming table, and its whole table becomes the prefix.
func TestLargePrefixIsStreamed(t *testing.T) {
	f := startStreamingRegistry(t)
	ctx := context.Background()
	ident := table.Identifier{"ns", "p"}
	createTable(t, f, ident)
	appendIDs(t, f.cat, ident, 10, 11, 12, 13, 14, 15, 16)
	appendIDs(t, f.cat, ident, 17, 18, 19, 20)
	appendIDs(t, f.cat, ident, 21)
	waitFor(t, "12 records", func() bool { tp, ok := f.reg.Topic("ns.p"); return ok && tp.Index.HighWatermark(0) == 12 })
	tp, _ := f.reg.Topic("ns.p")
	// The first snapshot expires: the second's 11 live rows become the
	// prefix in place of offsets 0..10.
	expireAllButLast2(t, f.cat, ident)
	waitFor(t, "compacted prefix", func() bool {
		seg, ok := tp.Index.Locate(0, tp.Index.LogStart(0))
		return ok && seg.Kind == offsets.KindCompactedPrefix
	})
	start := tp.Index.LogStart(0)
	seg, _ := tp.Index.Locate(0, start)
	if seg.Count != 11 {
		t.Fatalf("prefix %+v, want the 11 live rows of the second snapshot", seg)
	}
	enc := tp.Encoding()
	if _, ok := tp.changes.Get(tp.changesKey(seg.SnapshotID, seg.Kind, enc)); ok {
		t.Fatal("the large prefix was read whole to be indexed")
	}
	var ids []int64
	for first := int64(0); first < seg.Count; first += 4 {
		c, base, err := tp.ChangesAt(ctx, seg, enc, first)
		if err != nil {
			t.Fatal(err)
		}
		if base != first {
			t.Fatalf("chunk for %d starts at %d", first, base)
		}
		for _, r := range c.Records {
			if r.Op != changelog.OpRead {
				t.Fatalf("prefix record op %v, want a read", r.Op)
			}
		}
		ids = append(ids, idsOf(t, c)...)
	}
	// In the order ReadSnapshot gives the live rows (files by path).
	ref := changelog.SnapshotRef{SnapshotID: seg.SnapshotID, SequenceNumber: seg.SequenceNumber, TimestampMs: seg.TimestampMs}
	whole, err := derive.ReadSnapshot(ctx, tp.tableFor(seg.SnapshotID), ref, tp.deriveOptions(enc))
	if err != nil {
		t.Fatal(err)
	}
	if want := idsOf(t, whole); !slices.Equal(ids, want) {
		t.Fatalf("prefix ids %v, ReadSnapshot gives %v", ids, want)
	}

	// A later expiry replaces the prefix: its chunks and streams go at once.
	appendIDs(t, f.cat, ident, 22)
	expireAllButLast2(t, f.cat, ident)
	waitFor(t, "the next prefix", func() bool {
		next, ok := tp.Index.Locate(0, tp.Index.LogStart(0))
		return ok && next.Kind == offsets.KindCompactedPrefix && next.SnapshotID != seg.SnapshotID
	})
	// The index shows the new prefix a moment before the old one's rows
	// are dropped.
	waitFor(t, "the replaced prefix's chunks and streams gone", func() bool {
		for k := int64(1); k <= 3; k++ {
			chunk := tp.changesKey(seg.SnapshotID, seg.Kind, enc)
			chunk.chunk = k
			if _, ok := tp.changes.Get(chunk); ok {
				return false
			}
		}
		tp.streams.mu.Lock()
		defer tp.streams.mu.Unlock()
		for _, slot := range tp.streams.slots {
			if slot.key.snapshotID == seg.SnapshotID {
				return false
			}
		}
		return true
	})
}

// Readers of one segment at once, each at chunks of its own (queued behind
// a stream at their place, seeking one, or evicting one of the four),
// all get the records of their chunk; once the topic stops, none streams.
func TestStreamSetConcurrentReaders(t *testing.T) {
	f := startStreamingRegistry(t)
	ctx := context.Background()
	ident := table.Identifier{"ns", "c"}
	createTable(t, f, ident)
	ids := make([]int64, 40)
	for i := range ids {
		ids[i] = int64(10 + i)
	}
	appendIDs(t, f.cat, ident, ids...)
	waitFor(t, "40 records", func() bool { tp, ok := f.reg.Topic("ns.c"); return ok && tp.Index.HighWatermark(0) == 40 })
	tp, _ := f.reg.Topic("ns.c")
	seg, _ := tp.Index.Locate(0, 0)
	enc := tp.Encoding()
	ref := changelog.SnapshotRef{SnapshotID: seg.SnapshotID, SequenceNumber: seg.SequenceNumber, TimestampMs: seg.TimestampMs}
	open := func() (*derive.Stream, bool, error) {
		return derive.OpenAppendStream(ctx, tp.tableFor(seg.SnapshotID), ref, tp.deriveOptions(enc))
	}
	key := streamKey{snapshotID: seg.SnapshotID, kind: seg.Kind, encoding: enc.Name}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 30 {
				chunk := int64((g*7 + i*3) % 10)
				c, ok, err := tp.streams.read(ctx, key, chunk*4, 4, open)
				if err != nil || !ok {
					t.Errorf("reader %d, chunk %d: %v %v", g, chunk, ok, err)
					return
				}
				for j, r := range c.Records {
					got := c.Batches[r.After.Batch].Column(0).(*array.Int64).Value(int(r.After.Row))
					if want := 10 + chunk*4 + int64(j); got != want {
						t.Errorf("reader %d, chunk %d, record %d: id %d, want %d", g, chunk, j, got, want)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	tp.streams.mu.Lock()
	if n := len(tp.streams.slots); n > maxStreams {
		t.Errorf("%d streams open, at most %d", n, maxStreams)
	}
	tp.streams.mu.Unlock()
	tp.streams.closeAll()
	if _, ok, err := tp.streams.read(ctx, key, 0, 4, open); ok || err != nil {
		t.Errorf("read after closeAll: streamed (%v, %v)", ok, err)
	}
}
