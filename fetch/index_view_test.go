package fetch

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/lakegw/lakegw/offsets"
	"github.com/lakegw/lakegw/offsets/offsetstest"
	"github.com/lakegw/lakegw/topics"
)

// TestOneIndexViewPerFetch reads a partition from one view of its index,
// as protocol answers a Fetch, while another goroutine
// truncates the index and appends a snapshot of another size under each
// new epoch (issue 12, row 14). Every batch is in the cache, labelled with
// the epoch of its key and the record count that epoch's index gives it,
// so an answer is consistent only if its batches follow one epoch's
// layout (after the kept snapshot's, which keeps epoch 0) up to the high
// watermark it reports. A batch located in one
// state of the index and looked up under the epoch of another is labelled
// "foreign", or its counts do not add up to the high watermark.
func TestOneIndexViewPerFetch(t *testing.T) {
	ctx := context.Background()
	idx := offsetstest.Open(t, "ns.t", 1)
	const batchRecords = 2
	r, err := NewReader(Config{CacheBytes: 1 << 20, ReadAheadBatches: -1}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// Snapshot 1 (5 records) is kept; under epoch e a snapshot of
	// sizeUnder(e) records follows it.
	sizeUnder := func(epoch int32) int64 { return 3 + 4*int64(epoch%2) }
	const kept = 5
	// label caches, under epoch, every batch base either layout has: its
	// own layout's with their record counts, the other's as foreign.
	label := func(epoch int32) {
		own := map[int64]int64{}
		for base := int64(0); base < kept; base += batchRecords {
			own[base] = min(batchRecords, kept-base)
		}
		n := sizeUnder(epoch)
		for o := int64(0); o < n; o += batchRecords {
			own[kept+o] = min(batchRecords, n-o)
		}
		for base := int64(0); base < kept+7; base++ {
			v := []byte("foreign;")
			if c, ok := own[base]; ok {
				v = fmt.Appendf(nil, "e%d@%d+%d;", epoch, base, c)
			}
			// Snapshot 1 holds the kept offsets; the one appended under
			// epoch the rest (2 under epoch 0 and 1, then epoch+1).
			snapshot := max(int64(epoch)+1, 2)
			if base < kept {
				snapshot = 1
			}
			r.cache.add(batchKey{topic: "ns.t", partition: 0, epoch: epoch, baseOffset: base, batchRecords: batchRecords, compression: "none",
				segmentSnapshot: snapshot}, v, true)
		}
	}
	if err := idx.Append(ctx, []offsets.Snapshot{{SnapshotID: 1, Counts: []int64{kept}}}); err != nil {
		t.Fatal(err)
	}
	label(0)
	if err := idx.Append(ctx, []offsets.Snapshot{{SnapshotID: 2, Counts: []int64{sizeUnder(0)}}}); err != nil {
		t.Fatal(err)
	}
	tp := &topics.Topic{Name: "ns.t", Index: idx, Config: topics.TopicConfig{Compression: "none", BatchRecords: batchRecords}}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	// Stopped before the store closes, also when the test fails early.
	defer func() {
		close(stop)
		wg.Wait()
	}()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for e := int32(1); ; e++ {
			select {
			case <-stop:
				return
			default:
			}
			label(e)
			if err := idx.Truncate(ctx, 1); err != nil {
				t.Error(err)
				return
			}
			if err := idx.Append(ctx, []offsets.Snapshot{{SnapshotID: int64(e) + 1, Counts: []int64{sizeUnder(e)}}}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	for i := 0; i < 2000 && !t.Failed(); i++ {
		v := idx.View(0)
		spans := r.NewSpans(0)
		bs, err := r.ReadPartition(ctx, tp, &v, 0, 0, 1<<20, "none", spans)
		if err != nil {
			t.Fatal(err)
		}
		got, err := bs.ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		got = bytes.Clone(got)
		spans.Release()
		// The answer's offsets are those of the view the read leaves.
		hw := v.HighWatermark()
		if bytes.Contains(got, []byte("foreign")) {
			t.Fatalf("answer with high watermark %d mixes two states of the index: %s", hw, got)
		}
		var epoch int32 = -1
		next := int64(0)
		for _, part := range bytes.Split(bytes.TrimSuffix(got, []byte(";")), []byte(";")) {
			var e int32
			var base, n int64
			if _, err := fmt.Sscanf(string(part), "e%d@%d+%d", &e, &base, &n); err != nil {
				t.Fatalf("batch %q: %v", part, err)
			}
			// Each snapshot's batches carry its own epoch: snapshot 1's
			// is 0, the one after it the epoch it was appended under.
			if epoch >= 0 && e != epoch && base != kept || base != next {
				t.Fatalf("answer mixes epochs or skips offsets: %s", got)
			}
			epoch, next = e, base+n
		}
		// While the truncation is under way the index may be back at
		// snapshot 1 alone.
		if next != hw || (next != kept && next != kept+sizeUnder(epoch)) {
			t.Fatalf("batches of epoch %d end at %d, the answer's high watermark is %d: %s", epoch, next, hw, got)
		}
	}
}
