package cluster

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

// flakyRegistry answers heartbeats with a fixed live set until told to
// fail, as a state store that becomes unreachable.
type flakyRegistry struct {
	mu    sync.Mutex
	live  []Node
	fail  bool
	hang  bool // heartbeats wait for their deadline, as to a stalled database
	beats int
}

func (r *flakyRegistry) Heartbeat(ctx context.Context, n Node, _ string, _ time.Duration) ([]Node, error) {
	r.mu.Lock()
	r.beats++
	fail, hang, live := r.fail, r.hang, r.live
	r.mu.Unlock()
	switch {
	case hang:
		<-ctx.Done()
		return nil, ctx.Err()
	case fail:
		return nil, errors.New("connection refused")
	}
	return live, nil
}

func (r *flakyRegistry) setHang(h bool) {
	r.mu.Lock()
	r.hang = h
	r.mu.Unlock()
}

func (r *flakyRegistry) Leave(context.Context, int32, string) error { return nil }

func (r *flakyRegistry) setFail(f bool) {
	r.mu.Lock()
	r.fail = f
	r.mu.Unlock()
}

// A gateway that cannot reach the state store stops answering for
// anything before the others can count it dead, and comes back, with
// its watchers seeing it gain what it owns again, once it can.
func TestMembershipFencesItselfWithoutHeartbeats(t *testing.T) {
	reg := &flakyRegistry{live: nodes(0, 1)}
	m, err := New(nodes(0)[0], reg, Options{HeartbeatInterval: 20 * time.Millisecond, Lease: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Join(context.Background()); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []*View
	m.Watch(func(_, cur *View) { mu.Lock(); seen = append(seen, cur); mu.Unlock() })
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	defer func() { cancel(); <-done }()

	ownsSomething := func(v *View) bool {
		for p := range int32(50) {
			if v.Leader("t", p).ID == 0 {
				return true
			}
		}
		return false
	}
	if !ownsSomething(m.Current()) {
		t.Fatal("a live gateway of two leads nothing")
	}
	reg.setFail(true)
	failedAt := time.Now()
	waitFor(t, func() bool { return m.Current().Fenced })
	if since := time.Since(failedAt); since > 200*time.Millisecond {
		t.Errorf("fenced %s after the store went away: the others count it dead after the 200ms lease", since)
	}
	if ownsSomething(m.Current()) || m.Current().Coordinator("g").ID == 0 {
		t.Fatal("a fenced gateway still leads or coordinates")
	}
	reg.setFail(false)
	waitFor(t, func() bool { return !m.Current().Fenced && ownsSomething(m.Current()) })
	mu.Lock()
	defer mu.Unlock()
	if len(seen) < 3 || !seen[len(seen)-2].Fenced {
		t.Fatalf("watchers saw %d views, want the fenced one before the last", len(seen))
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 5s")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Heartbeats that hang (a stalled database) fence the gateway in time too:
// the fence does not wait for a heartbeat to return.
func TestMembershipFencesWhileHeartbeatsHang(t *testing.T) {
	reg := &flakyRegistry{live: nodes(0, 1)}
	// The interval is a third of the lease: a hanging heartbeat would
	// otherwise hold the fence past it.
	m, err := New(nodes(0)[0], reg, Options{HeartbeatInterval: 100 * time.Millisecond, Lease: 400 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Join(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(ctx) }()
	defer func() { cancel(); <-done }()
	time.Sleep(150 * time.Millisecond) // a successful heartbeat or two
	reg.setHang(true)
	hungAt := time.Now()
	waitFor(t, func() bool { return m.Current().Fenced })
	if since := time.Since(hungAt); since >= 400*time.Millisecond {
		t.Fatalf("fenced %s after heartbeats started hanging: the others count it dead after the 400ms lease", since)
	}
}

// A gateway whose topic defaults differ from a live one's is refused at
// Join (and leaves at once): the two would serve one table differently.
func TestJoinRefusesOtherTopicDefaults(t *testing.T) {
	self := Node{ID: 0, Defaults: "partitions=3"}
	reg := &flakyRegistry{live: []Node{self, {ID: 1, Defaults: "partitions=1"}}}
	m, err := New(self, reg, Options{HeartbeatInterval: 20 * time.Millisecond, Lease: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Join(context.Background()); !errors.Is(err, ErrDefaultsDiffer) {
		t.Fatalf("join beside other defaults: %v, want ErrDefaultsDiffer", err)
	}
	reg.live = []Node{self, {ID: 1, Defaults: "partitions=3"}}
	if err := m.Join(context.Background()); err != nil {
		t.Fatalf("join beside the same defaults: %v", err)
	}
}
