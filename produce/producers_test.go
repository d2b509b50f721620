package produce

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"
)

func batchOf(pid int64, epoch int16, first int32, n int) *Batch {
	return &Batch{ProducerID: pid, ProducerEpoch: epoch, BaseSequence: first, Records: make([]Record, n)}
}

// A new producer's first batches fail with their commit: a later batch
// must not be taken as the producer's start (its retry of the failed ones
// would then be refused as duplicates and lost); the retries are accepted
// in order.
func TestFailedCommitKeepsANewProducersOrder(t *testing.T) {
	s := newSeqState()
	now := time.Now()
	t1, t2 := &ticket{}, &ticket{}
	for i, b := range []*Batch{batchOf(7, 0, 0, 10), batchOf(7, 0, 10, 10)} {
		if dup, err := s.accept(b, []*ticket{t1, t2}[i], now); err != nil || dup != nil {
			t.Fatalf("batch %d: %v %v", i, dup, err)
		}
	}
	s.failed()
	if _, err := s.accept(batchOf(7, 0, 20, 10), &ticket{}, now); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("a batch after the failed ones: %v, want ErrOutOfOrderSequence", err)
	}
	for i, b := range []*Batch{batchOf(7, 0, 0, 10), batchOf(7, 0, 10, 10), batchOf(7, 0, 20, 10)} {
		if dup, err := s.accept(b, &ticket{}, now); err != nil || dup != nil {
			t.Fatalf("retry %d: %v %v", i, dup, err)
		}
	}
}

// A batch refused before its sequence was checked (no memory) leaves a
// hole the producer's next batch cannot jump.
func TestRefusedBatchLeavesAHole(t *testing.T) {
	s := newSeqState()
	s.hole(batchOf(9, 0, 0, 5))
	if _, err := s.accept(batchOf(9, 0, 5, 5), &ticket{}, time.Now()); !errors.Is(err, ErrOutOfOrderSequence) {
		t.Fatalf("the batch after a refused one: %v, want ErrOutOfOrderSequence", err)
	}
	if _, err := s.accept(batchOf(9, 0, 0, 5), &ticket{}, time.Now()); err != nil {
		t.Fatalf("the refused batch again: %v", err)
	}
}

// InitProducerId's epoch bump (KIP-360): the next epoch for the newest
// epoch of an id, PRODUCER_FENCED for an older one.
func TestBumpProducerEpochFencesOlderEpochs(t *testing.T) {
	cat, _ := openCatalog(t)
	s, _ := newService(t, cat)
	pid, epoch, err := s.InitProducerID()
	if err != nil {
		t.Fatal(err)
	}
	id, next, err := s.BumpProducerEpoch(pid, epoch)
	if err != nil || id != pid || next != epoch+1 {
		t.Fatalf("bump: %d %d %v", id, next, err)
	}
	if _, _, err := s.BumpProducerEpoch(pid, epoch); !errors.Is(err, ErrInvalidProducerEpoch) {
		t.Fatalf("a bump from the fenced epoch: %v, want ErrInvalidProducerEpoch", err)
	}
	if id, next, err := s.BumpProducerEpoch(12345, 7); err != nil || id != 12345 || next != 8 {
		t.Fatalf("an id this gateway does not know: %d %d %v", id, next, err)
	}
}

// Every commit carries the state of the producers seen lately, not only
// of its own: the newest snapshot alone lets a restart recognise a retry
// of a producer that wrote commits ago.
func TestNewestSnapshotCarriesEveryRecentProducer(t *testing.T) {
	cat, _ := openCatalog(t)
	s, _ := newService(t, cat)
	ctx := context.Background()
	if err := s.CreateRawTopic(ctx, "carry", 1, nil, false); err != nil {
		t.Fatal(err)
	}
	a, _, _ := s.InitProducerID()
	b, _, _ := s.InitProducerID()
	if res, _ := s.Produce(ctx, "carry", []Batch{{Partition: 0, ProducerID: a, Records: recs("a", 2)}}); res[0].Err != nil {
		t.Fatal(res[0].Err)
	}
	for i := range 3 {
		if res, _ := s.Produce(ctx, "carry", []Batch{{Partition: 0, ProducerID: b, BaseSequence: int32(i), Records: recs("b", 1)}}); res[0].Err != nil {
			t.Fatal(res[0].Err)
		}
	}
	tbl, err := cat.LoadTable(ctx, []string{"kafka", "carry"})
	if err != nil {
		t.Fatal(err)
	}
	var ps []summaryProducer
	if err := json.Unmarshal([]byte(tbl.CurrentSnapshot().Summary.Properties[SummaryProducers]), &ps); err != nil {
		t.Fatal(err)
	}
	found := map[int64]bool{}
	for _, p := range ps {
		found[p.PID] = true
	}
	if !found[a] || !found[b] {
		t.Fatalf("the newest snapshot carries producers %v, want %d and %d", found, a, b)
	}
}
