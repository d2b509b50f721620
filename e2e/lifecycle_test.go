package e2e

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// rawFetch fetches partition 0 of topic at offset with a raw Fetch request
// and returns the partition's answer.
func rawFetch(t *testing.T, cl *kgo.Client, topic string, offset int64, version int16) kmsg.FetchResponseTopicPartition {
	t.Helper()
	req := kmsg.NewPtrFetchRequest()
	req.Version = version
	req.ReplicaID = -1
	req.MaxWaitMillis = 100
	req.MaxBytes = 1 << 20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.Partition = 0
	rp.FetchOffset = offset
	rp.PartitionMaxBytes = 1 << 20
	rp.CurrentLeaderEpoch = -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp := fetchAtVersion(ctx, t, cl, req)
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("fetch answered %d topics", len(resp.Topics))
	}
	return resp.Topics[0].Partitions[0]
}

// allBatches returns every batch of partition 0, by base offset.
func allBatches(t *testing.T, addr string) map[int64][]byte {
	t.Helper()
	cl := mustClient(t, addr)
	out := map[int64][]byte{}
	off := int64(0)
	for {
		p := rawFetch(t, cl, topic, off, 12)
		if p.ErrorCode != 0 {
			t.Fatalf("fetch at %d: %v", off, kerr.ErrorForCode(p.ErrorCode))
		}
		if off >= p.HighWatermark {
			return out
		}
		raw := p.RecordBatches
		for len(raw) > 0 {
			var b kmsg.RecordBatch
			if err := b.ReadFrom(raw); err != nil {
				t.Fatalf("batch at %d: %v", off, err)
			}
			n := int(b.Length) + 12
			out[b.FirstOffset] = append([]byte(nil), raw[:n]...)
			off = b.FirstOffset + int64(b.LastOffsetDelta) + 1
			raw = raw[n:]
		}
	}
}

func TestRestartKeepsOffsetsBytesAndGroupOffsets(t *testing.T) {
	restartKeepsOffsetsBytesAndGroupOffsets(t)
}

// restartKeepsOffsetsBytesAndGroupOffsets runs the restart test with the
// gateway's flags extra (a state store, for one).
func restartKeepsOffsetsBytesAndGroupOffsets(t *testing.T, extra ...string) {
	dir := t.TempDir()
	w := setupTable(t, dir)
	g := startGateway(t, dir, "", extra...)
	before := allBatches(t, g.addr)
	if len(before) < 3 {
		t.Fatalf("want several batches, got %d", len(before))
	}
	adm := kadm.NewClient(mustClient(t, g.addr))
	commit := kadm.Offsets{}
	commit.AddOffset(topic, 0, 1234, -1)
	if _, err := adm.CommitOffsets(context.Background(), "restart-group", commit); err != nil {
		t.Fatal(err)
	}
	g.stop()

	g2 := startGateway(t, dir, g.addr, extra...)
	after := allBatches(t, g2.addr)
	if len(after) != len(before) {
		t.Fatalf("%d batches after restart, %d before", len(after), len(before))
	}
	for base, b := range before {
		if !bytes.Equal(after[base], b) {
			t.Fatalf("batch at offset %d differs after restart", base)
		}
	}
	adm2 := kadm.NewClient(mustClient(t, g2.addr))
	offs, err := adm2.FetchOffsets(context.Background(), "restart-group")
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := offs.Lookup(topic, 0); !ok || o.At != 1234 {
		t.Fatalf("group offset after restart: %+v, want 1234", o)
	}
	// And the records still decode to the table's rows.
	cl, err := kgo.NewClient(kgo.SeedBrokers(g2.addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	checkRecords(t, w, consumeN(t, cl, len(w.allRows()), 30*time.Second))
}

func TestLongPollWakesOnCommitAndIdlesCheaply(t *testing.T) {
	dir := t.TempDir()
	w := setupTable(t, dir)
	g := startGateway(t, dir, "")
	n := len(w.allRows())
	cl, err := kgo.NewClient(kgo.SeedBrokers(g.addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(int64(n))}}),
		kgo.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()

	// Idle: the consumer long-polls at the high watermark; the gateway
	// polls the catalog at 100 ms. Next to no CPU should be used.
	polled := make(chan []*kgo.Record, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		var got []*kgo.Record
		for len(got) == 0 && ctx.Err() == nil {
			got = append(got, cl.PollFetches(ctx).Records()...)
		}
		polled <- got
	}()
	time.Sleep(time.Second)
	cpu0 := g.cpuSeconds(t)
	time.Sleep(3 * time.Second)
	idle := g.cpuSeconds(t) - cpu0
	t.Logf("idle CPU over 3s with a waiting consumer: %.2fs", idle)
	if idle > 0.3 {
		t.Errorf("idle gateway used %.2fs of CPU in 3s (more than 10%% of a core)", idle)
	}

	commitAt := time.Now()
	s := w.appendRows(4)
	committed := time.Since(commitAt)
	select {
	case got := <-polled:
		lat := time.Since(commitAt) - committed
		t.Logf("commit to consumer: %v (after the commit returned)", lat)
		if lat > time.Second {
			t.Errorf("consumer got the new snapshot %v after its commit, want <= 1s", lat)
		}
		if len(got) == 0 || got[0].Offset != int64(n) || header(got[0], "lakegw.snapshot-id") == "" {
			t.Fatalf("woken consumer got %d records, first at offset %d", len(got), got[0].Offset)
		}
		_ = s
	case <-time.After(10 * time.Second):
		t.Fatal("waiting consumer never received the new snapshot")
	}
}
