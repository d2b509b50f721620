package groups

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// fakeTopics serves a fixed topic list to the coordinator.
type fakeTopics []TopicInfo

func (f fakeTopics) AllTopics() []TopicInfo { return f }

var (
	topicA = TopicInfo{Name: "a", ID: [16]byte{1}, Partitions: 4}
	topicB = TopicInfo{Name: "b", ID: [16]byte{2}, Partitions: 2}
)

func consumerOpts(ts ...TopicInfo) Options {
	o := testOpts()
	o.Topics = fakeTopics(ts)
	return o
}

// cmember drives one consumer-protocol member as a client would: it
// heartbeats with its epoch and reports what it owns, and owns what the
// last assignment gave it.
type cmember struct {
	t     *testing.T
	c     *Coordinator
	group string
	id    string
	epoch int32
	owned topicPartitions
}

func joinConsumer(t *testing.T, c *Coordinator, group, id string, topics ...string) *cmember {
	t.Helper()
	m := &cmember{t: t, c: c, group: group, id: id, owned: topicPartitions{}}
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID, req.MemberEpoch = group, id, 0
	req.RebalanceTimeoutMillis = 60000
	req.SubscribedTopicNames = topics
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	m.apply(c.ConsumerGroupHeartbeat(context.Background(), req))
	return m
}

func (m *cmember) apply(resp *kmsg.ConsumerGroupHeartbeatResponse) {
	m.t.Helper()
	wantCode(m.t, "heartbeat of "+m.id, resp.ErrorCode, 0)
	m.epoch = resp.MemberEpoch
	if resp.Assignment != nil {
		// A client revokes what is not in the assignment at once (these
		// tests have no rebalance callbacks to wait for).
		m.owned = topicPartitions{}
		for _, t := range resp.Assignment.Topics {
			for _, p := range t.Partitions {
				m.owned.add(t.TopicID, p)
			}
		}
	}
}

func (m *cmember) heartbeatReq() *kmsg.ConsumerGroupHeartbeatRequest {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID, req.MemberEpoch = m.group, m.id, m.epoch
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	for _, t := range sortedTopicIDs(m.owned) {
		req.Topics = append(req.Topics, kmsg.ConsumerGroupHeartbeatRequestTopic{TopicID: t, Partitions: slices.Clone(m.owned[t])})
	}
	return req
}

func (m *cmember) heartbeat() {
	m.t.Helper()
	m.apply(m.c.ConsumerGroupHeartbeat(context.Background(), m.heartbeatReq()))
}

// settle heartbeats every member round-robin until no assignment changes,
// checking after each step that no partition is owned twice.
func settle(t *testing.T, ms ...*cmember) {
	t.Helper()
	for range 20 {
		before := make([]topicPartitions, len(ms))
		for i, m := range ms {
			before[i] = m.owned.clone()
		}
		for _, m := range ms {
			m.heartbeat()
			noDoubleOwnership(t, ms...)
		}
		same := true
		for i, m := range ms {
			same = same && before[i].equal(m.owned)
		}
		if same {
			return
		}
	}
	t.Fatal("assignments did not settle in 20 rounds")
}

func noDoubleOwnership(t *testing.T, ms ...*cmember) {
	t.Helper()
	seen := map[ownedPartition]string{}
	for _, m := range ms {
		for tid, ps := range m.owned {
			for _, p := range ps {
				if other, ok := seen[ownedPartition{tid, p}]; ok {
					t.Fatalf("partition %v/%d owned by %s and %s", tid[0], p, other, m.id)
				}
				seen[ownedPartition{tid, p}] = m.id
			}
		}
	}
}

// TestConsumerGroupIncrementalReassignment: a second member joining gets
// half the partitions only after the first revoked them; no partition is
// ever owned twice; when a member leaves, the other gets everything.
func TestConsumerGroupIncrementalReassignment(t *testing.T) {
	c := newOpened(t, nil, consumerOpts(topicA, topicB))
	m1 := joinConsumer(t, c, "g", "m1", "a", "b")
	if m1.owned.size() != 6 || m1.epoch != 1 {
		t.Fatalf("first member: epoch %d, owns %d partitions, want epoch 1 and all 6", m1.epoch, m1.owned.size())
	}
	m2 := joinConsumer(t, c, "g", "m2", "a", "b")
	if m2.owned.size() != 0 {
		t.Fatalf("second member owns %v before the first revoked", m2.owned)
	}
	m2.heartbeat() // still nothing released
	if m2.owned.size() != 0 {
		t.Fatalf("second member owns %v before the first revoked", m2.owned)
	}
	m1.heartbeat() // told to revoke: epoch unchanged until it has
	if m1.owned.size() != 3 || m1.epoch != 1 {
		t.Fatalf("first member after the rebalance started: epoch %d, owns %d", m1.epoch, m1.owned.size())
	}
	settle(t, m1, m2)
	if m1.owned.size() != 3 || m2.owned.size() != 3 || m1.epoch != 2 || m2.epoch != 2 {
		t.Fatalf("settled: m1 epoch %d owns %d, m2 epoch %d owns %d; want 3 each at epoch 2", m1.epoch, m1.owned.size(), m2.epoch, m2.owned.size())
	}
	d := c.ConsumerGroupDescribe(context.Background(), &kmsg.ConsumerGroupDescribeRequest{Version: 1, Groups: []string{"g"}})
	if g := d.Groups[0]; g.ErrorCode != 0 || g.State != "Stable" || g.Epoch != 2 || len(g.Members) != 2 || g.AssignorName != "uniform" {
		t.Fatalf("describe: %+v", g)
	}

	leave := m2.heartbeatReq()
	leave.MemberEpoch = -1
	if resp := c.ConsumerGroupHeartbeat(context.Background(), leave); resp.ErrorCode != 0 || resp.MemberEpoch != -1 {
		t.Fatalf("leave: %v epoch %d", kerr.ErrorForCode(resp.ErrorCode), resp.MemberEpoch)
	}
	settle(t, m1)
	if m1.owned.size() != 6 || m1.epoch != 3 {
		t.Fatalf("after m2 left: m1 epoch %d owns %d, want epoch 3 and all 6", m1.epoch, m1.owned.size())
	}
}

// TestConsumerGroupRangeAssignor: with group.remote.assignor=range, members
// subscribed to the same topics get the same partition numbers of each.
func TestConsumerGroupRangeAssignor(t *testing.T) {
	c := newOpened(t, nil, consumerOpts(topicA, TopicInfo{Name: "c", ID: [16]byte{3}, Partitions: 4}))
	join := func(id string) *cmember {
		m := &cmember{t: t, c: c, group: "g", id: id, owned: topicPartitions{}}
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Version = 1
		req.Group, req.MemberID = "g", id
		req.RebalanceTimeoutMillis = 60000
		req.SubscribedTopicNames = []string{"a", "c"}
		req.ServerAssignor = kmsg.StringPtr("range")
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		m.apply(c.ConsumerGroupHeartbeat(context.Background(), req))
		return m
	}
	m1, m2 := join("m1"), join("m2")
	settle(t, m1, m2)
	for _, m := range []*cmember{m1, m2} {
		if !slices.Equal(m.owned[topicA.ID], m.owned[[16]byte{3}]) || len(m.owned[topicA.ID]) != 2 {
			t.Fatalf("%s owns %v: want the same two partitions of a and c", m.id, m.owned)
		}
	}
	if !slices.Equal(m1.owned[topicA.ID], []int32{0, 1}) {
		t.Fatalf("m1 owns %v of a, want [0 1]", m1.owned[topicA.ID])
	}
}

// TestConsumerGroupFencingAndStaticMembers: a stale epoch is fenced; a
// static member that leaves with -2 and comes back under a new member id
// gets its assignment and epoch back without a new group epoch.
func TestConsumerGroupFencingAndStaticMembers(t *testing.T) {
	c := newOpened(t, nil, consumerOpts(topicA))
	m1 := joinConsumer(t, c, "g", "m1", "a")
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID, req.MemberEpoch = "g", "m2", 0
	req.InstanceID = kmsg.StringPtr("pod-2")
	req.RebalanceTimeoutMillis = 60000
	req.SubscribedTopicNames = []string{"a"}
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	m2 := &cmember{t: t, c: c, group: "g", id: "m2", owned: topicPartitions{}}
	m2.apply(c.ConsumerGroupHeartbeat(context.Background(), req))
	settle(t, m1, m2)
	epoch, owned := m2.epoch, m2.owned.clone()

	stale := m1.heartbeatReq()
	stale.MemberEpoch = m1.epoch + 5
	wantCode(t, "future epoch", c.ConsumerGroupHeartbeat(context.Background(), stale).ErrorCode, kerr.FencedMemberEpoch.Code)

	// A second live member with the same instance id is refused.
	dup := *req
	dup.MemberID = "m2-twin"
	wantCode(t, "duplicate instance", c.ConsumerGroupHeartbeat(context.Background(), &dup).ErrorCode, kerr.UnreleasedInstanceID.Code)

	leave := m2.heartbeatReq()
	leave.MemberEpoch = -2
	leave.InstanceID = kmsg.StringPtr("pod-2")
	wantCode(t, "static leave", c.ConsumerGroupHeartbeat(context.Background(), leave).ErrorCode, 0)
	back := *req
	back.MemberID = "m2-restarted"
	resp := c.ConsumerGroupHeartbeat(context.Background(), &back)
	wantCode(t, "static rejoin", resp.ErrorCode, 0)
	m2b := &cmember{t: t, c: c, group: "g", id: "m2-restarted", owned: topicPartitions{}}
	m2b.apply(resp)
	if m2b.epoch != epoch || !m2b.owned.equal(owned) {
		t.Fatalf("static member back: epoch %d owns %v, want epoch %d and %v", m2b.epoch, m2b.owned, epoch, owned)
	}
	m1.heartbeat()
	if m1.epoch != epoch {
		t.Fatalf("the static rejoin bumped the group epoch: m1 at %d, want %d", m1.epoch, epoch)
	}
	// The old member id is gone.
	wantCode(t, "old static member id", c.ConsumerGroupHeartbeat(context.Background(), m2.heartbeatReq()).ErrorCode, kerr.UnknownMemberID.Code)
}

// TestConsumerGroupSessionExpiry: a member that stops heartbeating is
// removed after the session timeout and its partitions move.
func TestConsumerGroupSessionExpiry(t *testing.T) {
	o := consumerOpts(topicA)
	o.ConsumerSessionTimeout = 200 * time.Millisecond
	c := newOpened(t, nil, o)
	m1 := joinConsumer(t, c, "g", "m1", "a")
	m2 := joinConsumer(t, c, "g", "m2", "a")
	settle(t, m1, m2)
	deadline := time.Now().Add(5 * time.Second)
	for m1.owned.size() != 4 {
		if time.Now().After(deadline) {
			t.Fatalf("m1 owns %v after m2's session expired", m1.owned)
		}
		time.Sleep(50 * time.Millisecond)
		m1.heartbeat()
	}
}

// TestConsumerAndClassicGroupsSideBySide: a consumer-protocol member may
// not join a classic group with members, but an empty classic group (only
// committed offsets) becomes a consumer group and keeps them; a classic
// member may not join a consumer group with members; ListGroups and
// DescribeGroups tell the two apart.
func TestConsumerAndClassicGroupsSideBySide(t *testing.T) {
	c := newOpened(t, nil, consumerOpts(topicA))
	ctx := context.Background()
	stableSolo(t, c, "classic")
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID = "classic", "x"
	req.RebalanceTimeoutMillis = 60000
	req.SubscribedTopicNames = []string{"a"}
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	wantCode(t, "consumer member into a classic group", c.ConsumerGroupHeartbeat(ctx, req).ErrorCode, kerr.GroupIDNotFound.Code)

	// Offsets only: an empty classic group, upgraded on the first join.
	commit := kmsg.NewPtrOffsetCommitRequest()
	commit.Version = 8
	commit.Group, commit.Generation = "upgraded", -1
	commit.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "a", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: 42}}}}
	wantCode(t, "simple commit", c.OffsetCommit(ctx, commit).Topics[0].Partitions[0].ErrorCode, 0)
	m := joinConsumer(t, c, "upgraded", "m1", "a")

	fetch := kmsg.NewPtrOffsetFetchRequest()
	fetch.Version = 9
	fg := kmsg.NewOffsetFetchRequestGroup()
	fg.Group, fg.MemberID, fg.MemberEpoch = "upgraded", kmsg.StringPtr("m1"), m.epoch
	fetch.Groups = []kmsg.OffsetFetchRequestGroup{fg}
	fr := c.OffsetFetch(ctx, fetch)
	if g := fr.Groups[0]; g.ErrorCode != 0 || len(g.Topics) != 1 || g.Topics[0].Partitions[0].Offset != 42 {
		t.Fatalf("offsets of the upgraded group: %+v", g)
	}
	fetch.Groups[0].MemberEpoch = m.epoch + 1
	wantCode(t, "fetch with a stale member epoch", c.OffsetFetch(ctx, fetch).Groups[0].ErrorCode, kerr.StaleMemberEpoch.Code)

	// Commits by a member at its epoch land; at another epoch, STALE_MEMBER_EPOCH.
	commit.Version = 9
	commit.MemberID, commit.Generation = "m1", m.epoch
	wantCode(t, "member commit", c.OffsetCommit(ctx, commit).Topics[0].Partitions[0].ErrorCode, 0)
	commit.Generation = m.epoch - 1
	wantCode(t, "stale commit", c.OffsetCommit(ctx, commit).Topics[0].Partitions[0].ErrorCode, kerr.StaleMemberEpoch.Code)

	join := kmsg.NewPtrJoinGroupRequest()
	join.Version = 9
	join.Group, join.ProtocolType, join.SessionTimeoutMillis = "upgraded", "consumer", 10000
	join.Protocols = []kmsg.JoinGroupRequestProtocol{{Name: "range"}}
	wantCode(t, "classic member into a consumer group", c.JoinGroup(ctx, join).ErrorCode, kerr.InconsistentGroupProtocol.Code)

	lg := c.ListGroups(ctx, &kmsg.ListGroupsRequest{Version: 5})
	types := map[string]string{}
	for _, g := range lg.Groups {
		types[g.Group] = g.GroupType + "/" + g.GroupState
	}
	if types["classic"] != "classic/Stable" || types["upgraded"] != "consumer/Stable" {
		t.Fatalf("ListGroups: %v", types)
	}
	lg = c.ListGroups(ctx, &kmsg.ListGroupsRequest{Version: 5, TypesFilter: []string{"consumer"}})
	if len(lg.Groups) != 1 || lg.Groups[0].Group != "upgraded" {
		t.Fatalf("ListGroups of type consumer: %+v", lg.Groups)
	}
	dg := c.DescribeGroups(ctx, &kmsg.DescribeGroupsRequest{Version: 6, Groups: []string{"upgraded"}})
	wantCode(t, "DescribeGroups v6 of a consumer group", dg.Groups[0].ErrorCode, kerr.GroupIDNotFound.Code)
	cd := c.ConsumerGroupDescribe(ctx, &kmsg.ConsumerGroupDescribeRequest{Groups: []string{"classic"}})
	wantCode(t, "ConsumerGroupDescribe of a classic group", cd.Groups[0].ErrorCode, kerr.GroupIDNotFound.Code)

	// Once empty, the consumer group goes back to classic for a classic join.
	leave := m.heartbeatReq()
	leave.MemberEpoch = -1
	wantCode(t, "leave", c.ConsumerGroupHeartbeat(ctx, leave).ErrorCode, 0)
	join.MemberID = ""
	join.Version = 3
	join.RebalanceTimeoutMillis = 10000
	if resp := recv(t, "classic join to an empty consumer group", joinAsync(ctx, c, join)); resp.ErrorCode != 0 {
		t.Fatalf("classic join to an empty consumer group: %v", kerr.ErrorForCode(resp.ErrorCode))
	}
}

// TestConsumerHeartbeatValidation: malformed heartbeats get the errors
// Kafka gives them.
func TestConsumerHeartbeatValidation(t *testing.T) {
	c := newOpened(t, nil, consumerOpts(topicA))
	base := func() *kmsg.ConsumerGroupHeartbeatRequest {
		r := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		r.Version = 1
		r.Group, r.MemberID = "g", "m"
		r.RebalanceTimeoutMillis = 60000
		r.SubscribedTopicNames = []string{"a"}
		r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		return r
	}
	for _, tc := range []struct {
		name string
		edit func(*kmsg.ConsumerGroupHeartbeatRequest)
		want *kerr.Error
	}{
		{"no member id", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberID = "" }, kerr.InvalidRequest},
		{"no rebalance timeout", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.RebalanceTimeoutMillis = -1 }, kerr.InvalidRequest},
		{"owned partitions on join", func(r *kmsg.ConsumerGroupHeartbeatRequest) {
			r.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{{TopicID: topicA.ID, Partitions: []int32{0}}}
		}, kerr.InvalidRequest},
		{"no subscription", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicNames = nil }, kerr.InvalidRequest},
		{"unknown assignor", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.ServerAssignor = kmsg.StringPtr("sticky") }, kerr.UnsupportedAssignor},
		{"bad regex", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.SubscribedTopicRegex = kmsg.StringPtr("a(") }, kerr.InvalidRegularExpression},
		{"unknown member", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = 3 }, kerr.UnknownMemberID},
		{"epoch -3", func(r *kmsg.ConsumerGroupHeartbeatRequest) { r.MemberEpoch = -3 }, kerr.InvalidRequest},
	} {
		r := base()
		tc.edit(r)
		resp := c.ConsumerGroupHeartbeat(context.Background(), r)
		if resp.ErrorCode != tc.want.Code {
			t.Errorf("%s: got %v, want %v", tc.name, kerr.ErrorForCode(resp.ErrorCode), tc.want)
		}
	}
	// A regex subscription matches whole topic names.
	r := base()
	r.SubscribedTopicNames = nil
	r.SubscribedTopicRegex = kmsg.StringPtr("a|zzz")
	resp := c.ConsumerGroupHeartbeat(context.Background(), r)
	if resp.ErrorCode != 0 || resp.Assignment == nil || len(resp.Assignment.Topics) != 1 || len(resp.Assignment.Topics[0].Partitions) != 4 {
		t.Fatalf("regex subscription: %v %+v", kerr.ErrorForCode(resp.ErrorCode), resp.Assignment)
	}
}

// TestUniformAssignorBalancedAndSticky: the uniform assignor balances
// within one partition and keeps partitions where they were.
func TestUniformAssignorBalancedAndSticky(t *testing.T) {
	ids := []string{"m1", "m2", "m3"}
	sub := map[string][][16]byte{"m1": {{1}}, "m2": {{1}}, "m3": {{1}}}
	parts := map[[16]byte]int32{{1}: 10}
	first := assignUniform(assignInput{members: ids[:2], subscribed: sub, partitions: parts})
	second := assignUniform(assignInput{members: ids, subscribed: sub, partitions: parts, previous: first})
	moved := 0
	for _, id := range ids {
		n := second[id].size()
		if n < 3 || n > 4 {
			t.Fatalf("%s holds %d of 10 partitions over 3 members", id, n)
		}
		for _, p := range second[id][[16]byte{1}] {
			if id != "m3" && !first[id].contains([16]byte{1}, p) {
				t.Fatalf("%s was given partition %d it did not hold: only m3 should gain", id, p)
			}
		}
		if id == "m3" {
			moved = n
		}
	}
	if moved != 3 {
		t.Fatalf("%d partitions moved to the new member, want 3", moved)
	}
}

// TestConsumerCommitAtAnOlderEpoch: a member's commit at an older epoch
// than its current one lands for partitions it has held since that epoch
// (KIP-1251), and is STALE_MEMBER_EPOCH for one it got later.
func TestConsumerCommitAtAnOlderEpoch(t *testing.T) {
	c := newOpened(t, nil, consumerOpts(topicA))
	m1 := joinConsumer(t, c, "g", "m1", "a")
	old := m1.epoch
	m2 := joinConsumer(t, c, "g", "m2", "a")
	settle(t, m1, m2)
	leave := m2.heartbeatReq()
	leave.MemberEpoch = -1
	wantCode(t, "leave", c.ConsumerGroupHeartbeat(context.Background(), leave).ErrorCode, 0)
	settle(t, m1)
	if m1.epoch <= old+1 {
		t.Fatalf("m1 at epoch %d, want past %d", m1.epoch, old+1)
	}
	var keptP, regainedP int32 = -1, -1
	for p := int32(0); p < 4; p++ {
		if m1.owned.contains(topicA.ID, p) {
			if _, ok := slices.BinarySearch(m2.owned[topicA.ID], p); ok {
				regainedP = p
			} else {
				keptP = p
			}
		}
	}
	commit := func(p int32, epoch int32) int16 {
		r := kmsg.NewPtrOffsetCommitRequest()
		r.Version = 9
		r.Group, r.MemberID, r.Generation = "g", "m1", epoch
		r.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "a", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: p, Offset: 7}}}}
		return c.OffsetCommit(context.Background(), r).Topics[0].Partitions[0].ErrorCode
	}
	wantCode(t, "commit of a partition held since the old epoch", commit(keptP, old), 0)
	wantCode(t, "commit of a partition regained later", commit(regainedP, old), kerr.StaleMemberEpoch.Code)
	wantCode(t, "commit at a future epoch", commit(keptP, m1.epoch+1), kerr.StaleMemberEpoch.Code)
	wantCode(t, "commit at the current epoch", commit(regainedP, m1.epoch), 0)
}

// TestConsumerCommitsOfMovedPartitionsAreRefused: a partition that moved to
// another member is no longer the old owner's to commit, at any epoch; a
// transactional commit must be at the current epoch (KIP-447 fencing).
func TestConsumerCommitsOfMovedPartitionsAreRefused(t *testing.T) {
	c := newOpened(t, nil, consumerOpts(topicA))
	m1 := joinConsumer(t, c, "g", "m1", "a")
	old := m1.epoch
	m2 := joinConsumer(t, c, "g", "m2", "a")
	settle(t, m1, m2)
	moved := m2.owned[topicA.ID][0]
	commit := func(p int32, epoch int32) int16 {
		r := kmsg.NewPtrOffsetCommitRequest()
		r.Version = 9
		r.Group, r.MemberID, r.Generation = "g", "m1", epoch
		r.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "a", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: p, Offset: 7}}}}
		return c.OffsetCommit(context.Background(), r).Topics[0].Partitions[0].ErrorCode
	}
	wantCode(t, "old owner's commit at its old epoch", commit(moved, old), kerr.StaleMemberEpoch.Code)
	wantCode(t, "old owner's commit at its current epoch", commit(moved, m1.epoch), kerr.StaleMemberEpoch.Code)
	wantCode(t, "own partition", commit(m1.owned[topicA.ID][0], m1.epoch), 0)

	txn := kmsg.NewPtrTxnOffsetCommitRequest()
	txn.Version = 3
	txn.Group, txn.MemberID, txn.Generation = "g", "m1", old
	wantCode(t, "transactional commit at an old epoch", c.ValidateTxnOffsetCommit(txn), kerr.IllegalGeneration.Code)
	txn.Generation = m1.epoch
	wantCode(t, "transactional commit at the current epoch", c.ValidateTxnOffsetCommit(txn), 0)
}

// TestConsumerStaticLeaveIsFenced: a stale process cannot take its
// successor out of the group; a static member leaving for now releases what
// it was revoking at once, so the others do not wait for it.
func TestConsumerStaticLeaveIsFenced(t *testing.T) {
	c := newOpened(t, nil, consumerOpts(topicA))
	static := func(id, instance string) *cmember {
		req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
		req.Version = 1
		req.Group, req.MemberID, req.InstanceID = "g", id, kmsg.StringPtr(instance)
		req.RebalanceTimeoutMillis = 60000
		req.SubscribedTopicNames = []string{"a"}
		req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
		m := &cmember{t: t, c: c, group: "g", id: id, owned: topicPartitions{}}
		m.apply(c.ConsumerGroupHeartbeat(context.Background(), req))
		return m
	}
	m1 := static("m1", "pod-1")
	m2 := joinConsumer(t, c, "g", "m2", "a")
	m2.heartbeat()
	// m1 is told to revoke two partitions and leaves for now before it has.
	m1.heartbeat()
	if m1.owned.size() != 2 {
		t.Fatalf("m1 was told to keep %v, want two partitions", m1.owned)
	}
	m1.owned = topicPartitions{topicA.ID: {0, 1, 2, 3}}
	leave := m1.heartbeatReq()
	leave.MemberEpoch, leave.InstanceID = -2, kmsg.StringPtr("pod-1")
	stale := *leave
	stale.MemberID = "m1-old-process"
	wantCode(t, "a stale process's leave", c.ConsumerGroupHeartbeat(context.Background(), &stale).ErrorCode, kerr.FencedInstanceID.Code)
	wantCode(t, "static leave", c.ConsumerGroupHeartbeat(context.Background(), leave).ErrorCode, 0)
	m2.heartbeat()
	if m2.owned.size() != 2 {
		t.Fatalf("after m1 left for now, m2 owns %v, want the two partitions m1 was revoking", m2.owned)
	}
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Version = 1
	req.Group, req.MemberID, req.MemberEpoch = "g", "m3", 0
	req.RebalanceTimeoutMillis = 60000
	req.SubscribedTopicRegex = kmsg.StringPtr(strings.Repeat("(?:a?){50}", 60))
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	wantCode(t, "a regex too large to match cheaply", c.ConsumerGroupHeartbeat(context.Background(), req).ErrorCode, kerr.InvalidRegularExpression.Code)
}

// BenchmarkUniformAssignor: a thousand members taking ten thousand
// partitions from one previous owner, the worst case of the balancing
// moves, which run under the coordinator's lock.
func BenchmarkUniformAssignor(b *testing.B) {
	ids := make([]string, 1000)
	sub := map[string][][16]byte{}
	for i := range ids {
		ids[i] = fmt.Sprintf("m%04d", i)
		sub[ids[i]] = [][16]byte{{1}}
	}
	parts := map[[16]byte]int32{{1}: 10000}
	prev := map[string]topicPartitions{"m0000": {}}
	for p := int32(0); p < 10000; p++ {
		prev["m0000"].add([16]byte{1}, p)
	}
	b.ReportAllocs()
	for b.Loop() {
		assignUniform(assignInput{members: ids, subscribed: sub, partitions: parts, previous: prev})
	}
}
