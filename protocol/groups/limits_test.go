package groups

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Ids a client names its groups and itself with are bounded: what one
// group costs in memory, in the store and in ListGroups stays known.
func TestIDLengthLimits(t *testing.T) {
	c := newOpened(t, nil, testOpts())
	ctx := context.Background()
	longest := strings.Repeat("g", maxIDBytes)
	tooLong := longest + "g"

	wantCode(t, "join, group id of 250 bytes", c.JoinGroup(ctx, joinReq(tooLong)).ErrorCode, kerr.InvalidGroupID.Code)
	wantCode(t, "join, group id of 249 bytes", c.JoinGroup(ctx, joinReq(longest)).ErrorCode, kerr.MemberIDRequired.Code)
	allCodes(t, "commit, group id of 250 bytes", c.OffsetCommit(ctx, commitReq(tooLong, "", -1, "t", map[int32]int64{0: 1})), kerr.InvalidGroupID.Code)
	allCodes(t, "commit, group id of 249 bytes", c.OffsetCommit(ctx, commitReq(longest, "", -1, "t", map[int32]int64{0: 1})), 0)
	wantCode(t, "join, instance id of 250 bytes", c.JoinGroup(ctx, joinReq("g", withInstance(tooLong))).ErrorCode, kerr.InvalidRequest.Code)
	wantCode(t, "join, empty instance id", c.JoinGroup(ctx, joinReq("g", withInstance(""))).ErrorCode, kerr.InvalidRequest.Code)
	c.mu.Lock()
	_, made := c.groups[tooLong]
	c.mu.Unlock()
	if made || c.offsets.hasGroup(tooLong) {
		t.Fatal("a refused group id left state behind")
	}

	// A 16 KB client id names a member with its first 249 bytes.
	r := c.JoinGroup(WithClient(ctx, strings.Repeat("é", 8<<10), "h"), joinReq("g2"))
	wantCode(t, "join with a 16 KB client id", r.ErrorCode, kerr.MemberIDRequired.Code)
	prefix, _, _ := strings.Cut(r.MemberID, "-")
	if len(prefix) > maxIDBytes || !strings.HasPrefix(prefix, "éé") || !strings.HasSuffix(prefix, "é") {
		t.Fatalf("member id prefix of %d bytes (%q...), want at most %d whole characters", len(prefix), prefix[:8], maxIDBytes)
	}
}

// MaxGroups bounds the groups with membership state and the groups with
// committed offsets; a known group is not affected, and a new one is
// told to retry (COORDINATOR_NOT_AVAILABLE) rather than to give up.
func TestMaxGroups(t *testing.T) {
	o := testOpts()
	o.MaxGroups = 2
	c := newOpened(t, nil, o)
	ctx := context.Background()
	commit := func(group string) *kmsg.OffsetCommitResponse {
		return c.OffsetCommit(ctx, commitReq(group, "", -1, "t", map[int32]int64{0: 1}))
	}
	allCodes(t, "commit to a", commit("a"), 0)
	allCodes(t, "commit to b", commit("b"), 0)
	allCodes(t, "commit to a third group", commit("c"), kerr.CoordinatorNotAvailable.Code)
	allCodes(t, "commit to a known group", commit("a"), 0)
	if c.offsets.hasGroup("c") {
		t.Fatal("a refused commit left an offset behind")
	}

	wantCode(t, "join x", c.JoinGroup(ctx, joinReq("x")).ErrorCode, kerr.MemberIDRequired.Code)
	wantCode(t, "join y", c.JoinGroup(ctx, joinReq("y")).ErrorCode, kerr.MemberIDRequired.Code)
	wantCode(t, "join a third group", c.JoinGroup(ctx, joinReq("z")).ErrorCode, kerr.CoordinatorNotAvailable.Code)
	wantCode(t, "join a known group", c.JoinGroup(ctx, joinReq("x")).ErrorCode, kerr.MemberIDRequired.Code)
}

// MaxOffsetsPerGroup bounds the partitions one group holds offsets for: a
// commit that would add more is refused whole (INVALID_COMMIT_OFFSET_SIZE,
// which a client does not retry) and stores nothing; commits to partitions
// the group has already are not affected, nor are other groups.
func TestMaxOffsetsPerGroup(t *testing.T) {
	o := testOpts()
	o.MaxOffsetsPerGroup = 3
	c := newOpened(t, nil, o)
	ctx := context.Background()
	commit := func(group string, parts map[int32]int64) *kmsg.OffsetCommitResponse {
		return c.OffsetCommit(ctx, commitReq(group, "", -1, "t", parts))
	}
	allCodes(t, "two partitions", commit("g", map[int32]int64{0: 1, 1: 1}), 0)
	allCodes(t, "two more", commit("g", map[int32]int64{2: 1, 3: 1}), kerr.InvalidCommitOffsetSize.Code)
	if got := fetched(t, fetchV(c, 7, "g", map[string][]int32{"t": {2}}))[2].Offset; got != -1 {
		t.Fatalf("a refused commit stored offset %d of partition 2", got)
	}
	allCodes(t, "a third", commit("g", map[int32]int64{2: 5}), 0)
	allCodes(t, "the same three again", commit("g", map[int32]int64{0: 7, 1: 7, 2: 7}), 0)
	allCodes(t, "a fourth", commit("g", map[int32]int64{3: 1}), kerr.InvalidCommitOffsetSize.Code)
	allCodes(t, "another group", commit("h", map[int32]int64{0: 1, 1: 1, 2: 1}), 0)
	if got := fetched(t, fetchV(c, 7, "g", map[string][]int32{"t": {0}}))[0].Offset; got != 7 {
		t.Fatalf("partition 0 at %d, want 7", got)
	}
}

// A client host holds at most MaxPendingPerClient member ids it has not
// joined with; joining with one, or its lapsing, frees its slot.
func TestMaxPendingPerClient(t *testing.T) {
	o := testOpts()
	o.MaxPendingPerClient = 2
	o.PendingMemberTimeout = 200 * time.Millisecond
	c := newOpened(t, nil, o)
	hostA := WithClient(context.Background(), "cl", "10.0.0.1")
	hostB := WithClient(context.Background(), "cl", "10.0.0.2")

	first := c.JoinGroup(hostA, joinReq("g1", withSession(30*time.Minute)))
	wantCode(t, "A's first pending id", first.ErrorCode, kerr.MemberIDRequired.Code)
	wantCode(t, "A's second pending id", c.JoinGroup(hostA, joinReq("g2")).ErrorCode, kerr.MemberIDRequired.Code)
	wantCode(t, "A's third pending id", c.JoinGroup(hostA, joinReq("g3")).ErrorCode, kerr.CoordinatorNotAvailable.Code)
	wantCode(t, "B's first pending id", c.JoinGroup(hostB, joinReq("g3")).ErrorCode, kerr.MemberIDRequired.Code)

	// Joining with the id frees its slot.
	joined := joinAsync(hostA, c, joinReq("g1", withMember(first.MemberID)))
	wantCode(t, "A joins with its id", recv(t, "join", joined).ErrorCode, 0)
	wantCode(t, "A's pending id after a join", c.JoinGroup(hostA, joinReq("g4")).ErrorCode, kerr.MemberIDRequired.Code)

	// Lapsing frees the rest, even though the session asked for 30 min,
	// and the groups they made are forgotten.
	waitUntil(t, c, "pending ids to lapse", func() bool {
		return len(c.pendingByHost) == 0 && c.groups["g2"] == nil && c.groups["g4"] == nil && c.groups["g3"] == nil
	})
	wantCode(t, "A's pending id after lapsing", c.JoinGroup(hostA, joinReq("g5")).ErrorCode, kerr.MemberIDRequired.Code)
}

// A new member past MaxGroupSize, which counts pending member ids, is
// told GROUP_MAX_SIZE_REACHED; the default is 1000, not Kafka's unlimited.
func TestGroupMaxSizeCountsPendingAndDefaults(t *testing.T) {
	if got := testOpts().withDefaults().MaxGroupSize; got != DefaultMaxGroupSize {
		t.Fatalf("default MaxGroupSize %d, want %d", got, DefaultMaxGroupSize)
	}
	o := testOpts()
	o.MaxGroupSize = 2
	c := newOpened(t, nil, o)
	ctx := context.Background()
	wantCode(t, "first", c.JoinGroup(ctx, joinReq("g")).ErrorCode, kerr.MemberIDRequired.Code)
	wantCode(t, "second", c.JoinGroup(ctx, joinReq("g")).ErrorCode, kerr.MemberIDRequired.Code)
	wantCode(t, "third", c.JoinGroup(ctx, joinReq("g")).ErrorCode, kerr.GroupMaxSizeReached.Code)
}
