package groups

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/lakegw/lakegw/cluster"
)

// shardsWith is the set of shards holding the groups named (all: every
// shard).
func shardsWith(groups ...string) Shards {
	var s Shards
	for _, g := range groups {
		s[cluster.Shard(g)] = true
	}
	return s
}

func allShards() Shards {
	var s Shards
	for i := range s {
		s[i] = true
	}
	return s
}

func without(s Shards, groups ...string) Shards {
	for _, g := range groups {
		s[cluster.Shard(g)] = false
	}
	return s
}

// Two coordinators on one store, as two gateways sharing a state store:
// a group moves from one to the other, and the new one answers with the
// offsets the old one committed, never with what it held before; the old
// one answers NOT_COORDINATOR and forgets the group.
func TestGroupMovesBetweenCoordinators(t *testing.T) {
	store := newMemStore()
	a := newOpened(t, store, testOpts())
	b := newOpened(t, store, testOpts())
	a.SetOwnership(shardsWith("moving"), 0)
	b.SetOwnership(without(allShards(), "moving"), 0)
	waitServed(t, a, "moving")
	ctx := context.Background()

	allCodes(t, "commit on a", a.OffsetCommit(ctx, commitReq("moving", "", -1, "t", map[int32]int64{0: 10})), 0)
	allCodes(t, "commit on the wrong coordinator", b.OffsetCommit(ctx, commitReq("moving", "", -1, "t", map[int32]int64{0: 99})), kerr.NotCoordinator.Code)
	// b takes the group over (a lost it first).
	a.SetOwnership(Shards{}, 0)
	b.SetOwnership(allShards(), 0)
	waitServed(t, b, "moving")
	if got := committedOffset(t, b, "moving"); got != 10 {
		t.Fatalf("b after taking the group over: offset %d, want 10", got)
	}
	allCodes(t, "commit on b", b.OffsetCommit(ctx, commitReq("moving", "", -1, "t", map[int32]int64{0: 20})), 0)

	// Back to a, which held 10 in memory once: it must load 20.
	b.SetOwnership(without(allShards(), "moving"), 0)
	a.SetOwnership(shardsWith("moving"), 0)
	waitServed(t, a, "moving")
	if got := committedOffset(t, a, "moving"); got != 20 {
		t.Fatalf("a after taking the group back: offset %d, want 20 (committed on b)", got)
	}
	resp := fetchV(b, 7, "moving", map[string][]int32{"t": {0}})
	wantCode(t, "fetch on the old coordinator", resp.ErrorCode, kerr.NotCoordinator.Code)
	if b.offsets.hasGroup("moving") {
		t.Error("b still holds the offsets of a group it no longer coordinates")
	}
}

// A coordinator's first ownership takes over every shard it names: the
// offsets it read at Open may be older than the store's by then.
func TestFirstOwnershipLoadsFromTheStore(t *testing.T) {
	store := newMemStore()
	a := newOpened(t, store, testOpts())
	b := newOpened(t, store, testOpts()) // opened (offsets read) before a commits
	allCodes(t, "commit on a", a.OffsetCommit(context.Background(), commitReq("g", "", -1, "t", map[int32]int64{0: 7})), 0)
	b.SetOwnership(allShards(), 0)
	waitServed(t, b, "g")
	if got := committedOffset(t, b, "g"); got != 7 {
		t.Fatalf("b's first ownership serves offset %d, want 7 from the store", got)
	}
}

// A gained group waits for grace (its previous coordinator learning it
// lost it) and then for its offsets: it never serves before both.
func TestGainedGroupWaitsForGraceAndItsOffsets(t *testing.T) {
	store := newMemStore()
	c := newOpened(t, store, testOpts())
	c.SetOwnership(Shards{}, 0)
	start := time.Now()
	c.SetOwnership(allShards(), 150*time.Millisecond)
	waitServed(t, c, "g")
	if waited := time.Since(start); waited < 150*time.Millisecond {
		t.Fatalf("served after %s, before the 150ms grace", waited)
	}
	c.SetOwnership(Shards{}, 0)
	store.setFail(context.DeadlineExceeded)
	c.SetOwnership(allShards(), 0)
	time.Sleep(150 * time.Millisecond)
	wantCode(t, "while the store fails", c.groupCode("g"), kerr.CoordinatorLoadInProgress.Code)
	store.setFail(nil)
	waitServed(t, c, "g")
}

// Expiry leaves alone the groups another gateway coordinates, whatever
// stale copy of their offsets this one holds.
func TestExpirySkipsGroupsOfOtherCoordinators(t *testing.T) {
	c, clock, store := expiringCoordinator(t)
	allCodes(t, "commit", c.OffsetCommit(context.Background(), commitReq("elsewhere", "", -1, "t", map[int32]int64{0: 5})), 0)
	c.SetOwnership(without(allShards(), "elsewhere"), 0)
	c.offsets.replaceGroups(func(string) bool { return false }, []CommittedOffset{{Group: "elsewhere", Topic: "t", Offset: 5, CommitTimeMs: 1}})
	clock.set(clock.Now().Add(30 * 24 * time.Hour))
	if got := expire(t, c); len(got) != 0 {
		t.Fatalf("expired %v: groups another gateway coordinates", got)
	}
	if offs, _ := store.count(); offs != 1 {
		t.Fatalf("%d offsets left in the store, want the other gateway's 1", offs)
	}
}

// waitServed waits until c stops answering COORDINATOR_LOAD_IN_PROGRESS
// for group.
func waitServed(t *testing.T, c *Coordinator, group string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for c.groupCode(group) == kerr.CoordinatorLoadInProgress.Code {
		if time.Now().After(deadline) {
			t.Fatalf("group %s still loading", group)
		}
		time.Sleep(5 * time.Millisecond)
	}
	wantCode(t, "group "+group, c.groupCode(group), 0)
}

// A newer ownership arriving while shards wait out their grace does not
// cut it short: the shards keep the grace they were gained with.
func TestGraceSurvivesANewerOwnership(t *testing.T) {
	c := newOpened(t, newMemStore(), testOpts())
	c.SetOwnership(Shards{}, 0)
	start := time.Now()
	c.SetOwnership(allShards(), 200*time.Millisecond)
	c.SetOwnership(allShards(), 0) // a peer's death, say: no grace of its own
	waitServed(t, c, "g")
	if waited := time.Since(start); waited < 200*time.Millisecond {
		t.Fatalf("served after %s, before the first ownership's 200ms grace", waited)
	}
}
