package groups

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeClock is the retention clock of a test: it moves only when told.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeClock) set(t time.Time) {
	f.mu.Lock()
	f.now = t
	f.mu.Unlock()
}

const testRetention = 24 * time.Hour

// expiringCoordinator opens a coordinator on a memStore whose retention
// clock starts at a fixed time.
func expiringCoordinator(t *testing.T) (*Coordinator, *fakeClock, *memStore) {
	t.Helper()
	clock := &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	store := newMemStore()
	return newOpened(t, store, retentionOpts(clock)), clock, store
}

func retentionOpts(clock *fakeClock) Options {
	o := testOpts()
	o.OffsetsRetention = testRetention
	o.OffsetsRetentionCheck = time.Hour // the tests call ExpireOffsets themselves
	o.Now = clock.Now
	return o
}

// committedOffset fetches one partition's committed offset (-1: none).
func committedOffset(t *testing.T, c *Coordinator, group string) int64 {
	t.Helper()
	return fetched(t, fetchV(c, 7, group, map[string][]int32{"t": {0}}))[0].Offset
}

func expire(t *testing.T, c *Coordinator) []string {
	t.Helper()
	got, err := c.ExpireOffsets(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(got)
	return got
}

func TestOffsetsOfEmptyGroupsExpire(t *testing.T) {
	c, clock, store := expiringCoordinator(t)
	t0 := clock.Now()
	ctx := context.Background()

	// "simple" commits through assign() only: it counts as empty. "live"
	// has a member for the whole test until it leaves.
	allCodes(t, "simple commit", c.OffsetCommit(ctx, commitReq("simple", "", -1, "t", map[int32]int64{0: 5})), 0)
	id, gen := stableSolo(t, c, "live")
	allCodes(t, "member commit", c.OffsetCommit(ctx, commitReq("live", id, gen, "t", map[int32]int64{0: 7})), 0)

	clock.set(t0.Add(testRetention - time.Minute))
	if got := expire(t, c); len(got) != 0 {
		t.Fatalf("expired %v within retention", got)
	}
	if committedOffset(t, c, "simple") != 5 || committedOffset(t, c, "live") != 7 {
		t.Fatal("offsets lost within retention")
	}

	clock.set(t0.Add(testRetention + time.Minute))
	if got := expire(t, c); !slices.Equal(got, []string{"simple"}) {
		t.Fatalf("expired %v past retention, want only the empty group", got)
	}
	if o := committedOffset(t, c, "simple"); o != -1 {
		t.Fatalf("expired group fetches offset %d, want -1", o)
	}
	if committedOffset(t, c, "live") != 7 {
		t.Fatal("a group with members lost its offsets")
	}
	if n, _ := store.count(); n != 1 {
		t.Fatalf("store holds %d offsets, want the live group's 1", n)
	}

	// The last member leaves: retention counts from then, not from the
	// (older) last commit.
	left := clock.Now()
	lr := kmsg.NewPtrLeaveGroupRequest()
	lr.Group, lr.MemberID = "live", id
	wantCode(t, "leave", c.LeaveGroup(ctx, lr).ErrorCode, 0)
	clock.set(left.Add(testRetention - time.Minute))
	if got := expire(t, c); len(got) != 0 {
		t.Fatalf("expired %v although the group emptied within retention", got)
	}
	clock.set(left.Add(testRetention + time.Minute))
	if got := expire(t, c); !slices.Equal(got, []string{"live"}) {
		t.Fatalf("expired %v, want the emptied group", got)
	}
	if n, _ := store.count(); n != 0 {
		t.Fatalf("store holds %d offsets after expiry, want 0", n)
	}
	if o := committedOffset(t, c, "live"); o != -1 {
		t.Fatalf("expired group fetches offset %d, want -1", o)
	}
	resp := c.DescribeGroups(ctx, &kmsg.DescribeGroupsRequest{Groups: []string{"live", "simple"}})
	for _, g := range resp.Groups {
		if g.State != stateDead.String() {
			t.Fatalf("group %s is %s after expiry, want Dead (forgotten)", g.Group, g.State)
		}
	}

	// A group that commits again starts over.
	allCodes(t, "commit after expiry", c.OffsetCommit(ctx, commitReq("simple", "", -1, "t", map[int32]int64{0: 9})), 0)
	if committedOffset(t, c, "simple") != 9 {
		t.Fatal("commit after expiry not kept")
	}
	if got := expire(t, c); len(got) != 0 {
		t.Fatalf("expired %v right after a commit", got)
	}
}

func TestOffsetExpiryAfterRestartCountsFromLastCommit(t *testing.T) {
	c, clock, store := expiringCoordinator(t)
	t0 := clock.Now()
	id, gen := stableSolo(t, c, "g")
	allCodes(t, "commit", c.OffsetCommit(context.Background(), commitReq("g", id, gen, "t", map[int32]int64{0: 3})), 0)
	c.Close()

	// After a restart the members are gone: the group is empty and its
	// last commit is what retention counts from.
	clock.set(t0.Add(testRetention + time.Minute))
	c = newOpened(t, store, retentionOpts(clock))
	if got := expire(t, c); !slices.Equal(got, []string{"g"}) {
		t.Fatalf("expired %v after restart, want g", got)
	}
	if o := committedOffset(t, c, "g"); o != -1 {
		t.Fatalf("fetch after expiry: %d", o)
	}
}

func TestOffsetExpiryFailureKeepsOffsets(t *testing.T) {
	c, clock, store := expiringCoordinator(t)
	t0 := clock.Now()
	allCodes(t, "commit", c.OffsetCommit(context.Background(), commitReq("g", "", -1, "t", map[int32]int64{0: 3})), 0)
	clock.set(t0.Add(2 * testRetention))
	store.setFail(errStoreDown)
	if _, err := c.ExpireOffsets(context.Background()); err == nil {
		t.Fatal("a failed store delete must be reported")
	}
	if committedOffset(t, c, "g") != 3 {
		t.Fatal("offsets dropped from memory although the store kept them")
	}
	store.setFail(nil)
	if got := expire(t, c); !slices.Equal(got, []string{"g"}) {
		t.Fatalf("retry expired %v", got)
	}
}

func TestOffsetExpiryRunsOnItsTicker(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := &fakeClock{now: t0}
	store := newMemStore()
	opts := retentionOpts(clock)
	opts.OffsetsRetentionCheck = time.Millisecond
	c := newOpened(t, store, opts)
	allCodes(t, "commit", c.OffsetCommit(context.Background(), commitReq("g", "", -1, "t", map[int32]int64{0: 3})), 0)
	clock.set(t0.Add(testRetention + time.Minute))
	waitUntil(t, c, "the expiry loop to remove g", func() bool { return !c.offsets.hasGroup("g") })
	if n, _ := store.count(); n != 0 {
		t.Fatalf("store holds %d offsets, want 0", n)
	}
}

func TestOffsetRetentionNegativeKeepsForever(t *testing.T) {
	clock := &fakeClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	opts := retentionOpts(clock)
	opts.OffsetsRetention = -1
	c := newOpened(t, nil, opts)
	allCodes(t, "commit", c.OffsetCommit(context.Background(), commitReq("g", "", -1, "t", map[int32]int64{0: 3})), 0)
	clock.set(clock.Now().Add(100 * 365 * 24 * time.Hour))
	if got := expire(t, c); len(got) != 0 || committedOffset(t, c, "g") != 3 {
		t.Fatalf("offsets expired with retention off: %v", got)
	}
}

func TestOffsetExpiryDropsEntriesOfFailedFirstCommits(t *testing.T) {
	c, _, store := expiringCoordinator(t)
	store.setFail(errStoreDown)
	c.OffsetCommit(context.Background(), commitReq("g", "", -1, "t", map[int32]int64{0: 3}))
	store.setFail(nil)
	if got := expire(t, c); len(got) != 0 {
		t.Fatalf("expired %v: a group that never committed has nothing to expire", got)
	}
	c.offsets.mu.RLock()
	n := len(c.offsets.groups)
	c.offsets.mu.RUnlock()
	if n != 0 {
		t.Fatalf("%d offset entries left after a failed first commit, want 0", n)
	}
}
