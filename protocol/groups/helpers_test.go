package groups

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// memStore is an in-memory OffsetStore that survives coordinator
// "restarts" within a test and can be told to fail.
type memStore struct {
	mu      sync.Mutex
	offs    map[[3]string]CommittedOffset
	saves   int
	failErr error // returned by SaveOffsets and LoadOffsets when set
}

func newMemStore() *memStore { return &memStore{offs: make(map[[3]string]CommittedOffset)} }

func key(o CommittedOffset) [3]string {
	return [3]string{o.Group, o.Topic, fmt.Sprint(o.Partition)}
}

func (s *memStore) LoadOffsets(context.Context) ([]CommittedOffset, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failErr != nil {
		return nil, s.failErr
	}
	out := make([]CommittedOffset, 0, len(s.offs))
	for _, o := range s.offs {
		out = append(out, o)
	}
	return out, nil
}

func (s *memStore) SaveOffsets(_ context.Context, offs []CommittedOffset) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failErr != nil {
		return s.failErr
	}
	s.saves++
	for _, o := range offs {
		s.offs[key(o)] = o
	}
	return nil
}

func (s *memStore) DeletePartitionOffsets(_ context.Context, group string, parts []TopicPartition) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failErr != nil {
		return s.failErr
	}
	for _, p := range parts {
		delete(s.offs, key(CommittedOffset{Group: group, Topic: p.Topic, Partition: p.Partition}))
	}
	return nil
}

func (s *memStore) DeleteGroupOffsets(_ context.Context, group string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failErr != nil {
		return s.failErr
	}
	for k := range s.offs {
		if k[0] == group {
			delete(s.offs, k)
		}
	}
	return nil
}

// count returns the number of stored offsets and of saves.
func (s *memStore) count() (offsets, saves int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.offs), s.saves
}

func (s *memStore) setFail(err error) {
	s.mu.Lock()
	s.failErr = err
	s.mu.Unlock()
}

var errStoreDown = errors.New("store down")

// testOpts allow short session timeouts so expiry tests run fast.
func testOpts() Options {
	return Options{MinSessionTimeout: 10 * time.Millisecond}
}

func newOpened(t *testing.T, store OffsetStore, opts Options) *Coordinator {
	t.Helper()
	c := New(store, zerologFor(t), opts)
	t.Cleanup(c.Close)
	if err := c.Open(context.Background()); err != nil {
		t.Fatalf("Open: %v", err)
	}
	return c
}

func wantCode(t *testing.T, what string, got, want int16) {
	t.Helper()
	if got != want {
		t.Fatalf("%s: error %v, want %v", what, kerr.ErrorForCode(got), kerr.ErrorForCode(want))
	}
}

// joinReq builds a consumer JoinGroup with one protocol per name, whose
// metadata is the member tag (so the leader can tell members apart).
type joinOpt func(*kmsg.JoinGroupRequest)

func withVersion(v int16) joinOpt  { return func(r *kmsg.JoinGroupRequest) { r.Version = v } }
func withMember(id string) joinOpt { return func(r *kmsg.JoinGroupRequest) { r.MemberID = id } }
func withInstance(id string) joinOpt {
	return func(r *kmsg.JoinGroupRequest) { r.InstanceID = kmsg.StringPtr(id) }
}
func withSession(d time.Duration) joinOpt {
	return func(r *kmsg.JoinGroupRequest) { r.SessionTimeoutMillis = int32(d / time.Millisecond) }
}
func withRebalance(d time.Duration) joinOpt {
	return func(r *kmsg.JoinGroupRequest) { r.RebalanceTimeoutMillis = int32(d / time.Millisecond) }
}
func withProtocols(typ string, names ...string) joinOpt {
	return func(r *kmsg.JoinGroupRequest) {
		r.ProtocolType = typ
		r.Protocols = nil
		for _, n := range names {
			r.Protocols = append(r.Protocols, kmsg.JoinGroupRequestProtocol{Name: n, Metadata: []byte("meta-" + n)})
		}
	}
}

func joinReq(group string, opts ...joinOpt) *kmsg.JoinGroupRequest {
	r := kmsg.NewPtrJoinGroupRequest()
	r.Version = 9
	r.Group = group
	r.SessionTimeoutMillis = 10000
	r.RebalanceTimeoutMillis = 10000
	withProtocols("consumer", "range")(r)
	for _, o := range opts {
		o(r)
	}
	return r
}

// joinAsync runs a JoinGroup in the background; the result arrives on
// the returned channel.
func joinAsync(ctx context.Context, c *Coordinator, req *kmsg.JoinGroupRequest) <-chan *kmsg.JoinGroupResponse {
	ch := make(chan *kmsg.JoinGroupResponse, 1)
	go func() { ch <- c.JoinGroup(ctx, req) }()
	return ch
}

func syncAsync(ctx context.Context, c *Coordinator, req *kmsg.SyncGroupRequest) <-chan *kmsg.SyncGroupResponse {
	ch := make(chan *kmsg.SyncGroupResponse, 1)
	go func() { ch <- c.SyncGroup(ctx, req) }()
	return ch
}

func recv[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(5 * time.Second):
		t.Fatalf("%s: no answer within 5s", what)
		panic("unreachable")
	}
}

func notYet[T any](t *testing.T, what string, ch <-chan T) {
	t.Helper()
	select {
	case v := <-ch:
		t.Fatalf("%s: answered early: %+v", what, v)
	case <-time.After(50 * time.Millisecond):
	}
}

func syncReq(group, member string, gen int32, assign map[string]string) *kmsg.SyncGroupRequest {
	r := kmsg.NewPtrSyncGroupRequest()
	r.Version = 5
	r.Group = group
	r.MemberID = member
	r.Generation = gen
	for id, a := range assign {
		r.GroupAssignment = append(r.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{MemberID: id, MemberAssignment: []byte(a)})
	}
	return r
}

func heartbeat(c *Coordinator, group, member string, gen int32) int16 {
	r := kmsg.NewPtrHeartbeatRequest()
	r.Version = 4
	r.Group = group
	r.MemberID = member
	r.Generation = gen
	return c.Heartbeat(context.Background(), r).ErrorCode
}

// joinOne joins a new dynamic member through MEMBER_ID_REQUIRED and
// returns its member id and the channel of its (blocking) second join.
func joinOne(t *testing.T, c *Coordinator, group string, opts ...joinOpt) (string, <-chan *kmsg.JoinGroupResponse) {
	t.Helper()
	first := c.JoinGroup(context.Background(), joinReq(group, opts...))
	wantCode(t, "first join", first.ErrorCode, kerr.MemberIDRequired.Code)
	if first.MemberID == "" {
		t.Fatal("MEMBER_ID_REQUIRED without a member id")
	}
	ch := joinAsync(context.Background(), c, joinReq(group, append(opts, withMember(first.MemberID))...))
	waitUntil(t, c, "member "+first.MemberID, func() bool {
		g := c.groups[group]
		return g != nil && g.members[first.MemberID] != nil
	})
	return first.MemberID, ch
}

// stableSolo makes a one-member group stable and returns the member id
// and generation.
func stableSolo(t *testing.T, c *Coordinator, group string, opts ...joinOpt) (string, int32) {
	t.Helper()
	id, ch := joinOne(t, c, group, opts...)
	jr := recv(t, "join", ch)
	wantCode(t, "join", jr.ErrorCode, 0)
	sr := c.SyncGroup(context.Background(), syncReq(group, id, jr.Generation, map[string]string{id: "all"}))
	wantCode(t, "sync", sr.ErrorCode, 0)
	return id, jr.Generation
}

func commitReq(group, member string, gen int32, topic string, offsets map[int32]int64) *kmsg.OffsetCommitRequest {
	r := kmsg.NewPtrOffsetCommitRequest()
	r.Version = 8
	r.Group = group
	r.MemberID = member
	r.Generation = gen
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	for p, o := range offsets {
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition = p
		rp.Offset = o
		rp.LeaderEpoch = 3
		rp.Metadata = kmsg.StringPtr("md")
		rt.Partitions = append(rt.Partitions, rp)
	}
	r.Topics = append(r.Topics, rt)
	return r
}

// commitCodes returns the error code per partition of a commit response.
func commitCodes(resp *kmsg.OffsetCommitResponse) map[int32]int16 {
	out := make(map[int32]int16)
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out[p.Partition] = p.ErrorCode
		}
	}
	return out
}

func allCodes(t *testing.T, what string, resp *kmsg.OffsetCommitResponse, want int16) {
	t.Helper()
	for p, code := range commitCodes(resp) {
		wantCode(t, fmt.Sprintf("%s partition %d", what, p), code, want)
	}
}

func zerologFor(t *testing.T) zerolog.Logger {
	return zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.InfoLevel)
}

// waitUntil polls cond, evaluated under the coordinator's lock, so a test
// can be sure a request started in the background has been registered.
func waitUntil(t *testing.T, c *Coordinator, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c.mu.Lock()
		ok := cond()
		c.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// waitJoining waits until member id of group is blocked in JoinGroup.
func waitJoining(t *testing.T, c *Coordinator, group, id string) {
	t.Helper()
	waitUntil(t, c, id+" joining", func() bool {
		g := c.groups[group]
		return g != nil && g.members[id] != nil && g.members[id].joinWait != nil
	})
}

// waitState waits until group is in state s.
func waitState(t *testing.T, c *Coordinator, group string, s groupState) {
	t.Helper()
	waitUntil(t, c, group+" "+s.String(), func() bool {
		g := c.groups[group]
		return g != nil && g.state == s
	})
}
