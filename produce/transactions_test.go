package produce

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// A transaction's commit is found by TransactionCommitted while the
// transaction is pending, however many commits and expired snapshots
// follow it (each later commit carries its marker), and the marker is
// dropped once the transaction is no longer pending. The records land
// once, in one commit, at dense offsets after what was committed before.
func TestTransactionMarkerOutlivesExpiry(t *testing.T) {
	cat, _ := openCatalog(t)
	var mu sync.Mutex
	pending := map[string]bool{"p.0.1": true}
	isPending := func(m string) bool { mu.Lock(); defer mu.Unlock(); return pending[m] }
	s, _ := newServiceWith(t, cat, Config{CommitInterval: 10 * time.Millisecond, ExpiredFilesGrace: -1, TransactionPending: isPending})
	ctx := context.Background()
	if err := s.CreateRawTopic(ctx, "txns", 1, nil, false); err != nil {
		t.Fatal(err)
	}
	if res, _ := s.Produce(ctx, "txns", []Batch{{Partition: 0, ProducerID: NoProducer, Records: recs("before", 3)}}); res[0].Err != nil {
		t.Fatal(res[0].Err)
	}
	txn := []Batch{{Partition: 0, ProducerID: 7, Records: recs("t1", 4)}, {Partition: 0, ProducerID: 7, BaseSequence: 4, Records: recs("t2", 2)}}
	if err := s.CommitTransaction(ctx, "txns", "p.0.1", txn); err != nil {
		t.Fatalf("commit transaction: %v", err)
	}
	if ok, err := s.TransactionCommitted(ctx, "txns", "p.0.1"); err != nil || !ok {
		t.Fatalf("right after its commit: committed %v, %v", ok, err)
	}
	for c := range RawSnapshotsKept + 5 {
		if res, _ := s.Produce(ctx, "txns", []Batch{{Partition: 0, ProducerID: NoProducer, Records: recs(fmt.Sprint("after", c), 1)}}); res[0].Err != nil {
			t.Fatal(res[0].Err)
		}
	}
	if ok, err := s.TransactionCommitted(ctx, "txns", "p.0.1"); err != nil || !ok {
		t.Fatalf("after %d more commits (its snapshot expired): committed %v, %v; want true while pending", RawSnapshotsKept+5, ok, err)
	}
	if ok, _ := s.TransactionCommitted(ctx, "txns", "p.0.2"); ok {
		t.Fatal("a transaction never committed is found")
	}
	// A restarted writer reads the carried markers back from the table.
	s.stopWriter("txns")
	if ok, err := s.TransactionCommitted(ctx, "txns", "p.0.1"); err != nil || !ok {
		t.Fatalf("after the writer restarted: committed %v, %v", ok, err)
	}
	mu.Lock()
	delete(pending, "p.0.1")
	mu.Unlock()
	if res, _ := s.Produce(ctx, "txns", []Batch{{Partition: 0, ProducerID: NoProducer, Records: recs("last", 1)}}); res[0].Err != nil {
		t.Fatal(res[0].Err)
	}
	if ok, _ := s.TransactionCommitted(ctx, "txns", "p.0.1"); ok {
		t.Fatal("a completed transaction's marker is still carried")
	}
	rows := scanRows(t, cat, "txns")
	total := 3 + 6 + RawSnapshotsKept + 5 + 1
	for off := range total {
		if _, ok := rows[[2]int64{0, int64(off)}]; !ok {
			t.Fatalf("offset %d missing of %d: offsets are not dense", off, total)
		}
	}
	seen := map[string]int{}
	for _, v := range rows {
		seen[v]++
	}
	for _, b := range txn {
		for _, r := range b.Records {
			if seen[string(r.Value)] != 1 {
				t.Fatalf("record %q of the transaction is in the table %d times, want once", r.Value, seen[string(r.Value)])
			}
		}
	}
}
