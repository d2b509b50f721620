package groups

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestJoinSyncHeartbeatSingleMember(t *testing.T) {
	c := newOpened(t, nil, testOpts())
	ctx := WithClient(context.Background(), "client-a", "10.0.0.1")

	first := c.JoinGroup(ctx, joinReq("g"))
	wantCode(t, "first join", first.ErrorCode, kerr.MemberIDRequired.Code)
	if first.Version != 9 {
		t.Fatalf("response version %d, want 9", first.Version)
	}
	id := first.MemberID
	if len(id) < len("client-a-") || id[:len("client-a-")] != "client-a-" {
		t.Fatalf("member id %q does not start with the client id", id)
	}

	jr := c.JoinGroup(ctx, joinReq("g", withMember(id)))
	wantCode(t, "join", jr.ErrorCode, 0)
	if jr.Generation != 1 || jr.LeaderID != id || jr.MemberID != id {
		t.Fatalf("join: generation %d leader %q member %q", jr.Generation, jr.LeaderID, jr.MemberID)
	}
	if jr.Protocol == nil || *jr.Protocol != "range" || jr.ProtocolType == nil || *jr.ProtocolType != "consumer" {
		t.Fatalf("join: protocol %v type %v", jr.Protocol, jr.ProtocolType)
	}
	if len(jr.Members) != 1 || string(jr.Members[0].ProtocolMetadata) != "meta-range" {
		t.Fatalf("leader member list: %+v", jr.Members)
	}

	sr := c.SyncGroup(ctx, syncReq("g", id, 1, map[string]string{id: "p0,p1,p2"}))
	wantCode(t, "sync", sr.ErrorCode, 0)
	if string(sr.MemberAssignment) != "p0,p1,p2" {
		t.Fatalf("assignment %q", sr.MemberAssignment)
	}
	wantCode(t, "heartbeat", heartbeat(c, "g", id, 1), 0)
	wantCode(t, "heartbeat old generation", heartbeat(c, "g", id, 0), kerr.IllegalGeneration.Code)
	wantCode(t, "heartbeat unknown member", heartbeat(c, "g", "nobody", 1), kerr.UnknownMemberID.Code)
	wantCode(t, "heartbeat unknown group", heartbeat(c, "other", id, 1), kerr.UnknownMemberID.Code)

	dr := kmsg.NewPtrDescribeGroupsRequest()
	dr.Version = 5
	dr.Groups = []string{"g", "nope"}
	d := c.DescribeGroups(ctx, dr)
	g := d.Groups[0]
	if g.State != "Stable" || g.Protocol != "range" || g.ProtocolType != "consumer" || len(g.Members) != 1 {
		t.Fatalf("describe: %+v", g)
	}
	m := g.Members[0]
	if m.ClientID != "client-a" || m.ClientHost != "10.0.0.1" || string(m.MemberAssignment) != "p0,p1,p2" || string(m.ProtocolMetadata) != "meta-range" {
		t.Fatalf("describe member: %+v", m)
	}
	if d.Groups[1].State != "Dead" || d.Groups[1].ErrorCode != 0 {
		t.Fatalf("describe unknown group: %+v", d.Groups[1])
	}
}

func TestJoinOldVersionsNeedNoMemberID(t *testing.T) {
	c := newOpened(t, nil, testOpts())
	for _, v := range []int16{0, 3} {
		jr := c.JoinGroup(context.Background(), joinReq("g-old", withVersion(v)))
		wantCode(t, "join", jr.ErrorCode, 0)
		if jr.MemberID == "" || jr.LeaderID != jr.MemberID {
			t.Fatalf("v%d join: %+v", v, jr)
		}
		// Leave, so the next version joins an empty group again.
		lr := kmsg.NewPtrLeaveGroupRequest()
		lr.Version = 0
		lr.Group = "g-old"
		lr.MemberID = jr.MemberID
		wantCode(t, "leave", c.LeaveGroup(context.Background(), lr).ErrorCode, 0)
	}
}

func TestRebalanceOnMemberJoin(t *testing.T) {
	c := newOpened(t, nil, testOpts())
	a, gen := stableSolo(t, c, "g")

	b, bJoin := joinOne(t, c, "g")
	notYet(t, "second member's join", bJoin)
	wantCode(t, "heartbeat of a during rebalance", heartbeat(c, "g", a, gen), kerr.RebalanceInProgress.Code)
	// A commit of the old generation is still accepted while preparing,
	// so a member can save its progress before rejoining.
	allCodes(t, "commit while preparing", c.OffsetCommit(context.Background(), commitReq("g", a, gen, "t", map[int32]int64{0: 5})), 0)

	aJoin := joinAsync(context.Background(), c, joinReq("g", withMember(a)))
	ja, jb := recv(t, "join a", aJoin), recv(t, "join b", bJoin)
	wantCode(t, "join a", ja.ErrorCode, 0)
	wantCode(t, "join b", jb.ErrorCode, 0)
	if ja.Generation != gen+1 || jb.Generation != gen+1 {
		t.Fatalf("generations %d %d, want %d", ja.Generation, jb.Generation, gen+1)
	}
	if ja.LeaderID != a || jb.LeaderID != a {
		t.Fatalf("leader %q/%q, want the old leader %q", ja.LeaderID, jb.LeaderID, a)
	}
	if len(ja.Members) != 2 || len(jb.Members) != 0 {
		t.Fatalf("member lists: leader %d, follower %d", len(ja.Members), len(jb.Members))
	}

	// Commits between join and sync are refused: nobody owns partitions.
	allCodes(t, "commit while completing", c.OffsetCommit(context.Background(), commitReq("g", a, gen+1, "t", map[int32]int64{0: 6})), kerr.RebalanceInProgress.Code)

	bSync := syncAsync(context.Background(), c, syncReq("g", b, gen+1, nil))
	notYet(t, "follower sync before the leader's", bSync)
	sa := c.SyncGroup(context.Background(), syncReq("g", a, gen+1, map[string]string{a: "p0", b: "p1,p2"}))
	wantCode(t, "leader sync", sa.ErrorCode, 0)
	sb := recv(t, "follower sync", bSync)
	wantCode(t, "follower sync", sb.ErrorCode, 0)
	if string(sa.MemberAssignment) != "p0" || string(sb.MemberAssignment) != "p1,p2" {
		t.Fatalf("assignments %q %q", sa.MemberAssignment, sb.MemberAssignment)
	}
	wantCode(t, "heartbeat old generation", heartbeat(c, "g", a, gen), kerr.IllegalGeneration.Code)
	wantCode(t, "heartbeat b", heartbeat(c, "g", b, gen+1), 0)
}

func TestRebalanceOnSessionTimeout(t *testing.T) {
	c := newOpened(t, nil, testOpts())
	// A session long enough that a's heartbeats every 50 ms keep it alive
	// on a loaded machine (-race, CI), short enough to expire b's soon.
	opts := []joinOpt{withSession(time.Second), withRebalance(2 * time.Second)}

	a, gen := stableSolo(t, c, "g", opts...)
	b, bJoin := joinOne(t, c, "g", opts...)
	wantCode(t, "a heartbeat", heartbeat(c, "g", a, gen), kerr.RebalanceInProgress.Code)
	ja := recv(t, "join a", joinAsync(context.Background(), c, joinReq("g", append(opts, withMember(a))...)))
	jb := recv(t, "join b", bJoin)
	gen = ja.Generation
	bSync := syncAsync(context.Background(), c, syncReq("g", b, gen, nil))
	wantCode(t, "sync a", c.SyncGroup(context.Background(), syncReq("g", a, gen, map[string]string{a: "x", b: "y"})).ErrorCode, 0)
	wantCode(t, "sync b", recv(t, "sync b", bSync).ErrorCode, 0)
	_ = jb

	// a keeps heartbeating, b goes silent: b's session expires and a is
	// told to rebalance.
	deadline := time.Now().Add(6 * time.Second)
	for {
		code := heartbeat(c, "g", a, gen)
		if code == kerr.RebalanceInProgress.Code {
			break
		}
		wantCode(t, "a heartbeat while b alive", code, 0)
		if time.Now().After(deadline) {
			t.Fatal("b's session never expired")
		}
		time.Sleep(50 * time.Millisecond)
	}
	wantCode(t, "expired b heartbeat", heartbeat(c, "g", b, gen), kerr.UnknownMemberID.Code)
	ja = recv(t, "rejoin a", joinAsync(context.Background(), c, joinReq("g", append(opts, withMember(a))...)))
	wantCode(t, "rejoin a", ja.ErrorCode, 0)
	if ja.Generation != gen+1 || len(ja.Members) != 1 || ja.LeaderID != a {
		t.Fatalf("after expiry: generation %d members %d leader %q", ja.Generation, len(ja.Members), ja.LeaderID)
	}
}

func TestRebalanceTimeoutDropsMemberThatDoesNotRejoin(t *testing.T) {
	c := newOpened(t, nil, testOpts())
	opts := []joinOpt{withSession(5 * time.Second), withRebalance(300 * time.Millisecond)}
	a, gen := stableSolo(t, c, "g", opts...)

	_, bJoin := joinOne(t, c, "g", opts...)
	// a heartbeats (so its session lives) but never rejoins: the rebalance
	// timeout ends the join phase without it.
	wantCode(t, "a heartbeat", heartbeat(c, "g", a, gen), kerr.RebalanceInProgress.Code)
	start := time.Now()
	jb := recv(t, "join b", bJoin)
	wantCode(t, "join b", jb.ErrorCode, 0)
	if waited := time.Since(start); waited < 200*time.Millisecond {
		t.Fatalf("join completed after %v, before the rebalance timeout", waited)
	}
	if len(jb.Members) != 1 || jb.LeaderID != jb.MemberID {
		t.Fatalf("b should lead alone: %+v", jb)
	}
	wantCode(t, "dropped a heartbeat", heartbeat(c, "g", a, gen), kerr.UnknownMemberID.Code)
}

func TestMemberThatNeverSyncsIsRemoved(t *testing.T) {
	c := newOpened(t, nil, testOpts())
	opts := []joinOpt{withSession(5 * time.Second), withRebalance(300 * time.Millisecond)}
	a, gen := stableSolo(t, c, "g", opts...)
	b, bJoin := joinOne(t, c, "g", opts...)
	heartbeat(c, "g", a, gen)
	ja := recv(t, "join a", joinAsync(context.Background(), c, joinReq("g", append(opts, withMember(a))...)))
	recv(t, "join b", bJoin)
	// The leader syncs, b never does: after the rebalance timeout b is
	// removed and the group rebalances again.
	wantCode(t, "sync a", c.SyncGroup(context.Background(), syncReq("g", a, ja.Generation, map[string]string{a: "x", b: "y"})).ErrorCode, 0)
	deadline := time.Now().Add(3 * time.Second)
	for heartbeat(c, "g", a, ja.Generation) != kerr.RebalanceInProgress.Code {
		if time.Now().After(deadline) {
			t.Fatal("no rebalance after b failed to sync")
		}
		time.Sleep(30 * time.Millisecond)
	}
	wantCode(t, "b heartbeat", heartbeat(c, "g", b, ja.Generation), kerr.UnknownMemberID.Code)
}

func TestLeaveGroupRebalancesAndBatchLeave(t *testing.T) {
	c := newOpened(t, nil, testOpts())
	ja := c.JoinGroup(context.Background(), joinReq("g", withInstance("ia")))
	wantCode(t, "static join", ja.ErrorCode, 0)
	a, gen := ja.MemberID, ja.Generation
	wantCode(t, "sync a", c.SyncGroup(context.Background(), syncReq("g", a, gen, map[string]string{a: "x"})).ErrorCode, 0)
	jbCh := joinAsync(context.Background(), c, joinReq("g", withInstance("ib")))
	waitState(t, c, "g", statePreparingRebalance)
	wantCode(t, "a heartbeat", heartbeat(c, "g", a, gen), kerr.RebalanceInProgress.Code)
	ja = recv(t, "join a", joinAsync(context.Background(), c, joinReq("g", withMember(a), withInstance("ia"))))
	jb := recv(t, "join b", jbCh)
	wantCode(t, "join b", jb.ErrorCode, 0)
	b := jb.MemberID

	// b leaves (v0 form): a is told to rebalance and rejoins alone.
	lr := kmsg.NewPtrLeaveGroupRequest()
	lr.Version = 2
	lr.Group = "g"
	lr.MemberID = b
	wantCode(t, "leave b", c.LeaveGroup(context.Background(), lr).ErrorCode, 0)
	wantCode(t, "a heartbeat after leave", heartbeat(c, "g", a, ja.Generation), kerr.RebalanceInProgress.Code)
	ja = recv(t, "rejoin a", joinAsync(context.Background(), c, joinReq("g", withMember(a), withInstance("ia"))))
	if len(ja.Members) != 1 {
		t.Fatalf("a should be alone: %+v", ja.Members)
	}

	// Batch leave (v3+) by instance id, with one unknown and one fenced.
	lr = kmsg.NewPtrLeaveGroupRequest()
	lr.Version = 5
	lr.Group = "g"
	lr.Members = []kmsg.LeaveGroupRequestMember{
		{InstanceID: kmsg.StringPtr("ia")},
		{InstanceID: kmsg.StringPtr("nobody")},
		{MemberID: "ghost"},
	}
	resp := c.LeaveGroup(context.Background(), lr)
	wantCode(t, "batch leave", resp.ErrorCode, 0)
	wantCode(t, "leave ia", resp.Members[0].ErrorCode, 0)
	wantCode(t, "leave unknown instance", resp.Members[1].ErrorCode, kerr.UnknownMemberID.Code)
	wantCode(t, "leave unknown member", resp.Members[2].ErrorCode, kerr.UnknownMemberID.Code)

	lg := kmsg.NewPtrListGroupsRequest()
	lg.Version = 4
	if l := c.ListGroups(context.Background(), lg); len(l.Groups) != 0 {
		t.Fatalf("empty group without offsets should be gone: %+v", l.Groups)
	}
}

func TestStaticMemberRejoinKeepsAssignment(t *testing.T) {
	c := newOpened(t, nil, testOpts())
	// Static members join without MEMBER_ID_REQUIRED.
	ja := c.JoinGroup(context.Background(), joinReq("g", withInstance("ia")))
	wantCode(t, "join a", ja.ErrorCode, 0)
	a := ja.MemberID
	wantCode(t, "sync a", c.SyncGroup(context.Background(), syncReq("g", a, ja.Generation, map[string]string{a: "x"})).ErrorCode, 0)

	jbCh := joinAsync(context.Background(), c, joinReq("g", withInstance("ib")))
	waitState(t, c, "g", statePreparingRebalance)
	heartbeat(c, "g", a, ja.Generation)
	ja = recv(t, "rejoin a", joinAsync(context.Background(), c, joinReq("g", withMember(a), withInstance("ia"))))
	jb := recv(t, "join b", jbCh)
	b, gen := jb.MemberID, ja.Generation
	bSync := syncAsync(context.Background(), c, syncReq("g", b, gen, nil))
	wantCode(t, "sync a", c.SyncGroup(context.Background(), syncReq("g", a, gen, map[string]string{a: "pa", b: "pb"})).ErrorCode, 0)
	wantCode(t, "sync b", recv(t, "sync b", bSync).ErrorCode, 0)

	// b restarts: same instance id, no member id, and other metadata (a
	// restarted consumer's subscription owns nothing yet). It gets a new
	// member id in the same generation, without a rebalance, and its
	// assignment.
	restarted := func(r *kmsg.JoinGroupRequest) { r.Protocols[0].Metadata = []byte("restarted") }
	jb2 := c.JoinGroup(context.Background(), joinReq("g", withInstance("ib"), restarted))
	wantCode(t, "static rejoin", jb2.ErrorCode, 0)
	if jb2.MemberID == b || jb2.Generation != gen || jb2.LeaderID != a {
		t.Fatalf("static rejoin: member %q (old %q) generation %d (want %d) leader %q", jb2.MemberID, b, jb2.Generation, gen, jb2.LeaderID)
	}
	wantCode(t, "a heartbeat", heartbeat(c, "g", a, gen), 0) // no rebalance
	s := syncReq("g", jb2.MemberID, gen, nil)
	s.InstanceID = kmsg.StringPtr("ib")
	sb := c.SyncGroup(context.Background(), s)
	wantCode(t, "sync new b", sb.ErrorCode, 0)
	if string(sb.MemberAssignment) != "pb" {
		t.Fatalf("new b assignment %q, want pb", sb.MemberAssignment)
	}

	// The old incarnation is fenced.
	hb := kmsg.NewPtrHeartbeatRequest()
	hb.Version = 4
	hb.Group, hb.MemberID, hb.Generation, hb.InstanceID = "g", b, gen, kmsg.StringPtr("ib")
	wantCode(t, "old b heartbeat", c.Heartbeat(context.Background(), hb).ErrorCode, kerr.FencedInstanceID.Code)
	oc := commitReq("g", b, gen, "t", map[int32]int64{0: 1})
	oc.InstanceID = kmsg.StringPtr("ib")
	allCodes(t, "old b commit", c.OffsetCommit(context.Background(), oc), kerr.FencedInstanceID.Code)
}

// TestStaticLeaderRejoin: a static leader coming back with JoinGroup v9
// is told to skip the assignment (KIP-814) and gets its old one back from
// SyncGroup, with no rebalance; before v9 it could not be told, and the
// group rebalances so that its assignment is not computed for nothing.
func TestStaticLeaderRejoin(t *testing.T) {
	c := newOpened(t, nil, testOpts())
	ja := c.JoinGroup(context.Background(), joinReq("g", withInstance("ia")))
	a := ja.MemberID
	c.SyncGroup(context.Background(), syncReq("g", a, ja.Generation, map[string]string{a: "x"}))

	ja2 := c.JoinGroup(context.Background(), joinReq("g", withInstance("ia")))
	wantCode(t, "leader rejoin v9", ja2.ErrorCode, 0)
	if ja2.Generation != ja.Generation || ja2.LeaderID != ja2.MemberID || ja2.MemberID == a || !ja2.SkipAssignment || len(ja2.Members) != 1 {
		t.Fatalf("leader rejoin v9: %+v", ja2)
	}
	s := syncReq("g", ja2.MemberID, ja2.Generation, nil)
	s.InstanceID = kmsg.StringPtr("ia")
	sr := c.SyncGroup(context.Background(), s)
	wantCode(t, "sync after the leader rejoined", sr.ErrorCode, 0)
	if string(sr.MemberAssignment) != "x" {
		t.Fatalf("assignment after the leader rejoined: %q, want x", sr.MemberAssignment)
	}

	ja3 := c.JoinGroup(context.Background(), joinReq("g", withInstance("ia"), withVersion(8)))
	wantCode(t, "leader rejoin v8", ja3.ErrorCode, 0)
	if ja3.Generation != ja2.Generation+1 || ja3.LeaderID != ja3.MemberID {
		t.Fatalf("leader rejoin v8: %+v", ja3)
	}
}

func TestInconsistentProtocols(t *testing.T) {
	c := newOpened(t, nil, testOpts())
	stableSolo(t, c, "g", withProtocols("consumer", "range", "roundrobin"))
	r := c.JoinGroup(context.Background(), joinReq("g", withProtocols("consumer", "sticky")))
	wantCode(t, "no common protocol", r.ErrorCode, kerr.InconsistentGroupProtocol.Code)
	r = c.JoinGroup(context.Background(), joinReq("g", withProtocols("connect", "range")))
	wantCode(t, "other protocol type", r.ErrorCode, kerr.InconsistentGroupProtocol.Code)
	r = c.JoinGroup(context.Background(), joinReq("g2", withProtocols("consumer")))
	wantCode(t, "no protocols", r.ErrorCode, kerr.InconsistentGroupProtocol.Code)

	// A shared protocol is enough; the vote picks the one both prefer.
	b, bJoin := joinOne(t, c, "g", withProtocols("consumer", "roundrobin", "range"))
	_ = b
	lead := c.group("g", false)
	c.mu.Lock()
	leader, gen := lead.leader, lead.generation
	c.mu.Unlock()
	heartbeat(c, "g", leader, gen)
	ja := recv(t, "rejoin leader", joinAsync(context.Background(), c, joinReq("g", withMember(leader), withProtocols("consumer", "roundrobin", "range"))))
	jb := recv(t, "join b", bJoin)
	if *ja.Protocol != "roundrobin" || *jb.Protocol != "roundrobin" {
		t.Fatalf("selected %q/%q, want roundrobin", *ja.Protocol, *jb.Protocol)
	}
	s := syncReq("g", leader, ja.Generation, nil)
	s.Protocol = kmsg.StringPtr("range")
	wantCode(t, "sync with wrong protocol", c.SyncGroup(context.Background(), s).ErrorCode, kerr.InconsistentGroupProtocol.Code)
}

func TestRequestValidation(t *testing.T) {
	c := newOpened(t, nil, Options{})
	r := c.JoinGroup(context.Background(), joinReq("g", withSession(time.Second)))
	wantCode(t, "short session", r.ErrorCode, kerr.InvalidSessionTimeout.Code)
	r = c.JoinGroup(context.Background(), joinReq("", withSession(10*time.Second)))
	wantCode(t, "empty group", r.ErrorCode, kerr.InvalidGroupID.Code)
	r = c.JoinGroup(context.Background(), joinReq("g", withMember("made-up")))
	wantCode(t, "unknown member", r.ErrorCode, kerr.UnknownMemberID.Code)
	wantCode(t, "sync unknown group", c.SyncGroup(context.Background(), syncReq("g", "x", 1, nil)).ErrorCode, kerr.UnknownMemberID.Code)

	id, gen := stableSolo(t, c, "g")
	wantCode(t, "sync bad generation", c.SyncGroup(context.Background(), syncReq("g", id, gen+7, nil)).ErrorCode, kerr.IllegalGeneration.Code)
	wantCode(t, "sync unknown member", c.SyncGroup(context.Background(), syncReq("g", "x", gen, nil)).ErrorCode, kerr.UnknownMemberID.Code)
	joinOne(t, c, "g") // starts a rebalance
	wantCode(t, "sync while preparing", c.SyncGroup(context.Background(), syncReq("g", id, gen, nil)).ErrorCode, kerr.RebalanceInProgress.Code)
}

func TestGroupMaxSize(t *testing.T) {
	o := testOpts()
	o.MaxGroupSize = 1
	c := newOpened(t, nil, o)
	stableSolo(t, c, "g")
	r := c.JoinGroup(context.Background(), joinReq("g"))
	wantCode(t, "second member", r.ErrorCode, kerr.GroupMaxSizeReached.Code)
}

func TestLoadingAndClosed(t *testing.T) {
	store := newMemStore()
	store.setFail(errStoreDown)
	c := New(store, zerologFor(t), testOpts())
	defer c.Close()
	if err := c.Open(context.Background()); err == nil {
		t.Fatal("Open succeeded with a failing store")
	}
	wantCode(t, "join while loading", c.JoinGroup(context.Background(), joinReq("g")).ErrorCode, kerr.CoordinatorLoadInProgress.Code)
	allCodes(t, "commit while loading", c.OffsetCommit(context.Background(), commitReq("g", "", -1, "t", map[int32]int64{0: 1})), kerr.CoordinatorLoadInProgress.Code)
	store.setFail(nil)
	if err := c.Open(context.Background()); err != nil {
		t.Fatalf("retried Open: %v", err)
	}

	// A join blocked in a rebalance is answered when the coordinator closes.
	a, _ := stableSolo(t, c, "g")
	_ = a
	_, bJoin := joinOne(t, c, "g")
	notYet(t, "b join", bJoin)
	c.Close()
	wantCode(t, "blocked join at close", recv(t, "b join", bJoin).ErrorCode, kerr.CoordinatorNotAvailable.Code)
	wantCode(t, "heartbeat after close", heartbeat(c, "g", a, 1), kerr.CoordinatorNotAvailable.Code)
	if err := c.Open(context.Background()); err == nil {
		t.Fatal("Open after Close succeeded")
	}
}

func TestCancelledJoinStillCountsAsJoined(t *testing.T) {
	c := newOpened(t, nil, testOpts())
	opts := []joinOpt{withSession(5 * time.Second), withRebalance(300 * time.Millisecond)}
	a, gen := stableSolo(t, c, "g", opts...)

	// b joins on a connection that closes while it waits.
	first := c.JoinGroup(context.Background(), joinReq("g", opts...))
	b := first.MemberID
	ctx, cancel := context.WithCancel(context.Background())
	bJoin := joinAsync(ctx, c, joinReq("g", append(opts, withMember(b))...))
	waitJoining(t, c, "g", b)
	cancel()
	recv(t, "cancelled b join", bJoin)

	// As in Kafka, b still counts as joined: a's rejoin completes at once,
	// with b in the generation.
	wantCode(t, "a heartbeat", heartbeat(c, "g", a, gen), kerr.RebalanceInProgress.Code)
	ja := recv(t, "a rejoin", joinAsync(context.Background(), c, joinReq("g", append(opts, withMember(a))...)))
	wantCode(t, "a rejoin", ja.ErrorCode, 0)
	if len(ja.Members) != 2 {
		t.Fatalf("generation has %d members, want 2", len(ja.Members))
	}
	// b never syncs: after the rebalance timeout it is removed.
	wantCode(t, "a sync", c.SyncGroup(context.Background(), syncReq("g", a, ja.Generation, map[string]string{a: "x", b: "y"})).ErrorCode, 0)
	waitUntil(t, c, "b removed", func() bool { return c.groups["g"].members[b] == nil })
	wantCode(t, "a heartbeat after b removed", heartbeat(c, "g", a, ja.Generation), kerr.RebalanceInProgress.Code)
}

func TestListGroupsStatesFilter(t *testing.T) {
	c := newOpened(t, nil, testOpts())
	stableSolo(t, c, "stable-group")
	allCodes(t, "simple commit", c.OffsetCommit(context.Background(), commitReq("offsets-only", "", -1, "t", map[int32]int64{0: 1})), 0)

	lg := kmsg.NewPtrListGroupsRequest()
	lg.Version = 4
	l := c.ListGroups(context.Background(), lg)
	if len(l.Groups) != 2 || l.Groups[0].Group != "offsets-only" || l.Groups[0].GroupState != "Empty" ||
		l.Groups[1].Group != "stable-group" || l.Groups[1].GroupState != "Stable" || l.Groups[1].ProtocolType != "consumer" {
		t.Fatalf("list: %+v", l.Groups)
	}
	lg.StatesFilter = []string{"empty"}
	l = c.ListGroups(context.Background(), lg)
	if len(l.Groups) != 1 || l.Groups[0].Group != "offsets-only" {
		t.Fatalf("list Empty: %+v", l.Groups)
	}
	dr := kmsg.NewPtrDescribeGroupsRequest()
	dr.Groups = []string{"offsets-only"}
	if d := c.DescribeGroups(context.Background(), dr); d.Groups[0].State != "Empty" {
		t.Fatalf("describe offsets-only: %+v", d.Groups[0])
	}
}

func TestInitialRebalanceDelayGathersMembers(t *testing.T) {
	o := testOpts()
	o.InitialRebalanceDelay = 300 * time.Millisecond
	c := newOpened(t, nil, o)
	start := time.Now()
	aJoin := joinAsync(context.Background(), c, joinReq("g", withVersion(3)))
	waitState(t, c, "g", statePreparingRebalance)
	// The first member alone does not complete the join: the delay holds
	// it open for the second.
	notYet(t, "a join during the initial delay", aJoin)
	bJoin := joinAsync(context.Background(), c, joinReq("g", withVersion(3)))
	ja, jb := recv(t, "a join", aJoin), recv(t, "b join", bJoin)
	if ja.Generation != 1 || jb.Generation != 1 || len(ja.Members)+len(jb.Members) != 2 {
		t.Fatalf("want one generation of two: %+v %+v", ja, jb)
	}
	if waited := time.Since(start); waited < 250*time.Millisecond {
		t.Fatalf("join completed after %v, before the initial delay", waited)
	}
}
