package state

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/lakegw/lakegw/protocol/groups"
)

// Saves from many goroutines at once (different groups, as the
// coordinator makes them) all land, each group's last one winning, and
// take fewer transactions than saves.
func TestConcurrentSavesShareTransactions(t *testing.T) {
	ctx := context.Background()
	s := openTestStore(t)
	var mu sync.Mutex
	writes := 0
	counting := func(ctx context.Context, offs []groups.CommittedOffset) error {
		mu.Lock()
		writes++
		mu.Unlock()
		return s.writeGroupOffsets(ctx, offs)
	}
	const nGroups, saves = 8, 40
	var wg sync.WaitGroup
	for g := 0; g < nGroups; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 1; n <= saves; n++ {
				o := groups.CommittedOffset{Group: fmt.Sprintf("g%d", g), Topic: "ns.t", Offset: int64(n), LeaderEpoch: -1}
				if err := s.saves.save(ctx, []groups.CommittedOffset{o}, counting); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	got, err := s.LoadOffsets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != nGroups {
		t.Fatalf("%d offsets stored, want %d", len(got), nGroups)
	}
	for _, o := range got {
		if o.Offset != saves {
			t.Errorf("group %s at offset %d, want its last save %d", o.Group, o.Offset, saves)
		}
	}
	t.Logf("%d saves in %d transactions", nGroups*saves, writes)
	if writes >= nGroups*saves {
		t.Errorf("%d saves took %d transactions: concurrent saves did not share one", nGroups*saves, writes)
	}
}
