package e2e

import (
	"context"
	"testing"
	"time"

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

	// OffsetForLeaderEpoch: epoch 0 ended where the kept snapshot ends.
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.Version = 4
	req.ReplicaID = -1
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	rp.LeaderEpoch, rp.CurrentLeaderEpoch = 0, 1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	op := resp.Topics[0].Partitions[0]
	if op.ErrorCode != 0 || op.LeaderEpoch != 0 || op.EndOffset != 4 {
		t.Fatalf("OffsetForLeaderEpoch(0): code %d epoch %d end %d, want epoch 0 ending at 4", op.ErrorCode, op.LeaderEpoch, op.EndOffset)
	}

	// Fetch v12 from where the old history ended, saying the last record
	// came from epoch 0: the answer is the diverging epoch, not records.
	f := kmsg.NewPtrFetchRequest()
	f.Version = 12
	f.ReplicaID, f.MaxBytes = -1, 1<<20
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = topic
	fp := kmsg.NewFetchRequestTopicPartition()
	fp.FetchOffset, fp.LastFetchedEpoch, fp.CurrentLeaderEpoch, fp.PartitionMaxBytes = 10, 0, 1, 1<<20
	ft.Partitions = append(ft.Partitions, fp)
	f.Topics = append(f.Topics, ft)
	fr, err := f.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	p := fr.Topics[0].Partitions[0]
	if p.DivergingEpoch.Epoch != 0 || p.DivergingEpoch.EndOffset != 4 || len(p.RecordBatches) != 0 {
		t.Fatalf("fetch after rollback: diverging %+v, %d bytes of records", p.DivergingEpoch, len(p.RecordBatches))
	}
	// A client still on epoch 0 is fenced.
	fp.CurrentLeaderEpoch, fp.LastFetchedEpoch, fp.FetchOffset = 0, -1, 0
	ft.Partitions[0] = fp
	f.Topics[0] = ft
	fr, err = f.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if code := fr.Topics[0].Partitions[0].ErrorCode; code != 74 { // FENCED_LEADER_EPOCH
		t.Fatalf("fetch with the old epoch: code %d, want FENCED_LEADER_EPOCH", code)
	}
	// Reading the new history from the start gives the kept snapshot and
	// the new one.
	checkRecords(t, w, consumeAll(t, g.addr, 7))
}
