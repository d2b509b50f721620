package produce

import (
	"context"
	"slices"
	"testing"
	"time"
)

// A commit's requests are answered only once AwaitServed says the gateway
// serves the commit's end offsets, and the next commit does not wait for
// that: the second group commits while the first is still unanswered.
func TestAnswersWaitForTheIndex(t *testing.T) {
	cat, _ := openCatalog(t)
	ctx := context.Background()
	asked := make(chan []int64, 10)
	release := make(chan struct{})
	s, _ := newServiceWith(t, cat, Config{CommitInterval: time.Millisecond,
		AwaitServed: func(ctx context.Context, topic string, ends []int64) error {
			if topic != "orders" {
				t.Errorf("awaited topic %q, want orders", topic)
			}
			asked <- slices.Clone(ends)
			select {
			case <-release:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}})
	if err := s.CreateRawTopic(ctx, "orders", 2, nil, false); err != nil {
		t.Fatal(err)
	}
	answered := make(chan Result, 2)
	go func() {
		res, _ := s.Produce(ctx, "orders", []Batch{{Partition: 0, ProducerID: NoProducer, Records: recs("a", 5)}})
		answered <- res[0]
	}()
	if ends := <-asked; !slices.Equal(ends, []int64{5, 0}) {
		t.Fatalf("first commit awaited ends %v, want [5 0]", ends)
	}
	go func() {
		res, _ := s.Produce(ctx, "orders", []Batch{{Partition: 1, ProducerID: NoProducer, Records: recs("b", 3)}})
		answered <- res[0]
	}()
	// The second group commits while the first waits for the index
	// (its wait is only asked for once the first's is over).
	deadline := time.After(10 * time.Second)
	for len(scanRows(t, cat, "orders")) < 8 {
		select {
		case r := <-answered:
			t.Fatalf("answered %+v before the index served the commit", r)
		case <-deadline:
			t.Fatal("the second group was not committed while the first waited for the index")
		case <-time.After(20 * time.Millisecond):
		}
	}
	close(release)
	if r := <-answered; r.Err != nil || r.BaseOffset != 0 {
		t.Fatalf("first answer %+v, want base offset 0", r)
	}
	if ends := <-asked; !slices.Equal(ends, []int64{5, 3}) {
		t.Fatalf("second commit awaited ends %v, want [5 3]", ends)
	}
	if r := <-answered; r.Err != nil || r.BaseOffset != 0 {
		t.Fatalf("second answer %+v, want base offset 0 (partition 1)", r)
	}
}
