package groups

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Two coordinators on one store, as two gateways sharing a state store:
// a group moves from one to the other, and the new one answers with the
// offsets the old one committed, never with what it held before; the old
// one answers NOT_COORDINATOR and forgets the group.
func TestGroupMovesBetweenCoordinators(t *testing.T) {
	store := newMemStore()
	a := newOpened(t, store, testOpts())
	b := newOpened(t, store, testOpts())
	onA := func(g string) bool { return g == "moving" }
	onB := func(g string) bool { return g != "moving" }
	a.SetOwnership(onA)
	b.SetOwnership(onB)
	ctx := context.Background()

	allCodes(t, "commit on a", a.OffsetCommit(ctx, commitReq("moving", "", -1, "t", map[int32]int64{0: 10})), 0)
	allCodes(t, "commit on the wrong coordinator", b.OffsetCommit(ctx, commitReq("moving", "", -1, "t", map[int32]int64{0: 99})), kerr.NotCoordinator.Code)
	// b saw the group's offsets when it was its own before: b must not
	// serve them after taking it over.
	b.SetOwnership(func(string) bool { return true })
	waitServed(t, b, "moving")
	if got := committedOffset(t, b, "moving"); got != 10 {
		t.Fatalf("b after taking the group over: offset %d, want 10", got)
	}
	allCodes(t, "commit on b", b.OffsetCommit(ctx, commitReq("moving", "", -1, "t", map[int32]int64{0: 20})), 0)

	// Back to a, which held 10 in memory: it must load 20 from the store.
	// a saw a view in which it owned nothing (it was fenced: cluster/),
	// or one in which b held the group, before this one.
	b.SetOwnership(onB)
	a.SetOwnership(func(string) bool { return false })
	a.SetOwnership(onA)
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

// A group gained while the store fails answers COORDINATOR_LOAD_IN_PROGRESS
// (retriable) until the load succeeds: it never serves offsets it did not
// load.
func TestGainedGroupWaitsForItsOffsets(t *testing.T) {
	store := newMemStore()
	c := newOpened(t, store, testOpts())
	c.SetOwnership(func(string) bool { return false })
	store.setFail(context.DeadlineExceeded)
	c.SetOwnership(func(string) bool { return true })
	time.Sleep(150 * time.Millisecond)
	wantCode(t, "while the store fails", c.groupCode("g"), kerr.CoordinatorLoadInProgress.Code)
	store.setFail(nil)
	waitServed(t, c, "g")
}
