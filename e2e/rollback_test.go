package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestRollbackBumpsLeaderEpochAndClientsSeeTruncation rolls the table's main
// branch back: the offsets past the kept snapshot now name other records,
// so the gateway serves them under a new leader epoch, and a consumer that
// read the old history learns where it diverged (OffsetForLeaderEpoch, and
// Fetch v12's diverging epoch).
func TestRollbackBumpsLeaderEpochAndClientsSeeTruncation(t *testing.T) {
	dir := t.TempDir()
	w := newTableWriter(t, dir, "e2e", "events")
	first := w.appendRows(4)
	w.appendRows(6)
	g := startGateway(t, dir, "")
	cl := mustClient(t, g.addr)
	if p := rawFetch(t, cl, topic, 0, 12); p.HighWatermark != 10 {
		t.Fatalf("hwm %d before rollback", p.HighWatermark)
	}
	// Each snapshot's records carry their own epoch.
	kept, dropped := batchEpochAt(t, cl, 0), batchEpochAt(t, cl, 4)
	if dropped <= kept {
		t.Fatalf("the second snapshot's epoch %d is not above the first's %d", dropped, kept)
	}

	ctx := context.Background()
	tbl, err := w.cat.LoadTable(ctx, w.ident)
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.RollbackToSnapshot(first.SnapshotID); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	w.Snaps = w.Snaps[:1]
	w.appendRows(3)

	deadline := time.Now().Add(10 * time.Second)
	for rawFetch(t, cl, topic, 0, 12).HighWatermark != 7 {
		if time.Now().After(deadline) {
			t.Fatal("the topic did not follow the rollback")
		}
		time.Sleep(50 * time.Millisecond)
	}

	current := metadataEpoch(t, cl)
	// OffsetForLeaderEpoch of the dropped snapshot's epoch: the newest
	// epoch not after it is the kept snapshot's, which ends where that
	// snapshot ends.
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.Version = 4
	req.ReplicaID = -1
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	rp.LeaderEpoch, rp.CurrentLeaderEpoch = dropped, current
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	op := resp.Topics[0].Partitions[0]
	if op.ErrorCode != 0 || op.LeaderEpoch != kept || op.EndOffset != 4 {
		t.Fatalf("OffsetForLeaderEpoch(%d): code %d epoch %d end %d, want epoch %d ending at 4", dropped, op.ErrorCode, op.LeaderEpoch, op.EndOffset, kept)
	}

	// Fetch v12 from where the old history ended, saying the last record
	// came from the dropped snapshot: the answer is the diverging epoch,
	// not records.
	f := kmsg.NewPtrFetchRequest()
	f.Version = 12
	f.ReplicaID, f.MaxBytes = -1, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.FetchOffset, fp.LastFetchedEpoch, fp.CurrentLeaderEpoch, fp.PartitionMaxBytes = 10, dropped, current, 1<<20
	ft.Partitions = append(ft.Partitions, fp)
	f.Topics = append(f.Topics, ft)
	fr := fetchAtVersion(ctx, t, cl, f)
	p := fr.Topics[0].Partitions[0]
	if p.DivergingEpoch.Epoch != kept || p.DivergingEpoch.EndOffset != 4 || len(p.RecordBatches) != 0 {
		t.Fatalf("fetch after rollback: diverging %+v, %d bytes of records", p.DivergingEpoch, len(p.RecordBatches))
	}
	// A client that last saw the epoch before the rollback is fenced.
	fp.CurrentLeaderEpoch, fp.LastFetchedEpoch, fp.FetchOffset = dropped, -1, 0
	ft.Partitions[0] = fp
	f.Topics[0] = ft
	fr = fetchAtVersion(ctx, t, cl, f)
	if got := fr.Topics[0].Partitions[0]; got.ErrorCode != kerr.FencedLeaderEpoch.Code || got.CurrentLeader.LeaderID != -1 || len(fr.Brokers) != 0 {
		t.Fatalf("fetch v12 with the old epoch: %+v, want FENCED_LEADER_EPOCH", got)
	}
	// From v16 (KIP-951) a fenced answer names the current leader, this
	// gateway, with its epoch and endpoint, as Kafka's does.
	f.Version = 16
	f.Topics[0].TopicID = topicIDs(t, cl)[topic]
	fr = fetchAtVersion(ctx, t, cl, f)
	got := fr.Topics[0].Partitions[0]
	if got.ErrorCode != kerr.FencedLeaderEpoch.Code || got.CurrentLeader.LeaderID != 0 || got.CurrentLeader.LeaderEpoch != metadataEpoch(t, cl) {
		t.Fatalf("fetch v16 with the old epoch: %+v, want FENCED_LEADER_EPOCH naming leader 0 at epoch %d", got, metadataEpoch(t, cl))
	}
	if len(fr.Brokers) != 1 || fr.Brokers[0].NodeID != 0 || fmt.Sprintf("%s:%d", fr.Brokers[0].Host, fr.Brokers[0].Port) != g.addr {
		t.Fatalf("fetch v16 node endpoints %+v, want this gateway at %s", fr.Brokers, g.addr)
	}
	// Reading the new history from the start gives the kept snapshot and
	// the new one.
	checkRecords(t, w, consumeAll(t, g.addr, 7))
}

// batchEpochAt is the leader epoch of the record batch at offset of
// partition 0 of topic (its PartitionLeaderEpoch field).
func batchEpochAt(t *testing.T, cl *kgo.Client, offset int64) int32 {
	t.Helper()
	p := rawFetch(t, cl, topic, offset, 12)
	if len(p.RecordBatches) < 61 {
		t.Fatalf("no record batch at offset %d (code %d)", offset, p.ErrorCode)
	}
	var b kmsg.RecordBatch
	if err := b.ReadFrom(p.RecordBatches); err != nil {
		t.Fatalf("batch at %d: %v", offset, err)
	}
	return b.PartitionLeaderEpoch
}

// metadataEpoch is the leader epoch Metadata gives for partition 0 of topic.
func metadataEpoch(t *testing.T, cl *kgo.Client) int32 {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	req.Version = 9
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("metadata of %s: %d topics", topic, len(resp.Topics))
	}
	return resp.Topics[0].Partitions[0].LeaderEpoch
}
