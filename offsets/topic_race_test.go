package offsets

import (
	"context"
	"sync"
	"testing"
)

// TestPartitionsAndNameDuringRewrites reads the topic's fixed facts while
// Truncate, CompactPrefix and ResetToPrefix replace its state (issue 12,
// row 9): under -race, a read of the state they assign fails the test.
func TestPartitionsAndNameDuringRewrites(t *testing.T) {
	ctx := context.Background()
	tp := newTopic(t, 2)
	stop := whileRunning(func() bool {
		if n := tp.Partitions(); n != 2 {
			t.Errorf("Partitions = %d, want 2", n)
			return false
		}
		if name := tp.Name(); name != "ns.t" {
			t.Errorf("Name = %q", name)
			return false
		}
		return true
	})
	defer stop()
	id := int64(0)
	next := func() Snapshot {
		id++
		return Snapshot{SnapshotID: id, SequenceNumber: id, TimestampMs: id, Counts: []int64{2, 1}}
	}
	for i := 0; i < 20; i++ {
		if err := tp.Append(ctx, []Snapshot{next(), next(), next()}); err != nil {
			t.Fatal(err)
		}
		if err := tp.Truncate(ctx, tp.Len()-1); err != nil {
			t.Fatal(err)
		}
		if err := tp.CompactPrefix(ctx, 0, []int64{1, 1}); err != nil {
			t.Fatal(err)
		}
		s := next()
		if err := tp.ResetToPrefix(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
}

// whileRunning calls check over and over in a goroutine until the returned
// stop is called (which waits for it) or check returns false.
func whileRunning(check func() bool) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-done:
				return
			default:
			}
			if !check() {
				return
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
	}
}
