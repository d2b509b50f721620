package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

type fetchArgs struct {
	offset             int64
	maxBytes, partMax  int32
	minBytes, maxWaitM int32
}

func fetchWith(t *testing.T, addr string, a fetchArgs) (kmsg.FetchResponseTopicPartition, time.Duration) {
	t.Helper()
	cl := mustClient(t, addr)
	req := kmsg.NewPtrFetchRequest()
	req.Version = 12
	req.ReplicaID = -1
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes = a.maxWaitM, a.minBytes, a.maxBytes
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = a.offset, a.partMax, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	start := time.Now()
	resp := fetchAtVersion(context.Background(), t, cl, req)
	return resp.Topics[0].Partitions[0], time.Since(start)
}

func batchesOf(t *testing.T, raw []byte) []kmsg.RecordBatch {
	t.Helper()
	var out []kmsg.RecordBatch
	for len(raw) > 0 {
		var b kmsg.RecordBatch
		if err := b.ReadFrom(raw); err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
		raw = raw[b.Length+12:]
	}
	return out
}

// TestFetchReturnsWholeBatchesWithinByteLimits checks the Fetch contract
// clients rely on: the batch that holds the requested offset is returned
// whole (even if it alone exceeds the limits), batches never straddle
// snapshots, byte limits stop further batches, and MinBytes/MaxWait hold
// a fetch open.
func TestFetchReturnsWholeBatchesWithinByteLimits(t *testing.T) {
	dir := t.TempDir()
	setupTable(t, dir) // snapshots of 5, 2500 and 7 rows
	g := startGateway(t, dir, "")

	// Offset 1010 lies in the second batch of the 2500-row snapshot,
	// which starts at 5 + 1000.
	p, _ := fetchWith(t, g.addr, fetchArgs{offset: 1010, maxBytes: 1, partMax: 1})
	bs := batchesOf(t, p.RecordBatches)
	if len(bs) != 1 || bs[0].FirstOffset != 1005 || bs[0].NumRecords != 1000 {
		t.Fatalf("1-byte limits: %d batches, first at %d with %d records; want the one batch at 1005", len(bs), bs[0].FirstOffset, bs[0].NumRecords)
	}
	one := int32(len(p.RecordBatches))

	// Room for two batches by partition limit, more by request limit.
	p, _ = fetchWith(t, g.addr, fetchArgs{offset: 0, maxBytes: 10 << 20, partMax: 2*one + 10})
	bs = batchesOf(t, p.RecordBatches)
	var bases []int64
	for _, b := range bs {
		bases = append(bases, b.FirstOffset)
	}
	if len(bs) < 2 || bs[0].FirstOffset != 0 || bs[0].NumRecords != 5 || bs[1].FirstOffset != 5 || int32(len(p.RecordBatches)) > 2*one+10 {
		t.Fatalf("partition limit %d: batches at %v (%d bytes)", 2*one+10, bases, len(p.RecordBatches))
	}

	// Everything fits: batches cover every offset exactly once, one
	// snapshot per batch.
	p, _ = fetchWith(t, g.addr, fetchArgs{offset: 0, maxBytes: 50 << 20, partMax: 50 << 20})
	next := int64(0)
	for _, b := range batchesOf(t, p.RecordBatches) {
		if b.FirstOffset != next {
			t.Fatalf("batch at %d, want %d", b.FirstOffset, next)
		}
		next += int64(b.NumRecords)
	}
	if next != 2512 {
		t.Fatalf("batches end at %d, want 2512", next)
	}

	// MinBytes larger than what exists: the fetch waits MaxWait, then
	// answers with what there is.
	p, took := fetchWith(t, g.addr, fetchArgs{offset: 2505, maxBytes: 1 << 20, partMax: 1 << 20, minBytes: 1 << 20, maxWaitM: 600})
	if took < 500*time.Millisecond || len(batchesOf(t, p.RecordBatches)) != 1 {
		t.Fatalf("MinBytes fetch answered after %v with %d bytes", took, len(p.RecordBatches))
	}
}
