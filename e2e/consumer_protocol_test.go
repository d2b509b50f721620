package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ownership records which consumer owns each partition, from the clients'
// own assignment callbacks, and fails the test when a partition is given
// to a consumer while another still holds it: the consumer protocol moves
// a partition only after its owner revoked it.
type ownership struct {
	t     *testing.T
	mu    sync.Mutex
	owner map[int32]string
	bad   []string
}

func (o *ownership) assigned(name string) func(context.Context, *kgo.Client, map[string][]int32) {
	return func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
		o.mu.Lock()
		defer o.mu.Unlock()
		for _, p := range m["cp"] {
			if cur, ok := o.owner[p]; ok && cur != name {
				o.bad = append(o.bad, fmt.Sprintf("partition %d given to %s while %s owns it", p, name, cur))
			}
			o.owner[p] = name
		}
	}
}

func (o *ownership) revoked(name string) func(context.Context, *kgo.Client, map[string][]int32) {
	return func(_ context.Context, _ *kgo.Client, m map[string][]int32) {
		o.mu.Lock()
		defer o.mu.Unlock()
		for _, p := range m["cp"] {
			if o.owner[p] == name {
				delete(o.owner, p)
			}
		}
	}
}

func (o *ownership) counts() map[string]int {
	o.mu.Lock()
	defer o.mu.Unlock()
	out := map[string]int{}
	for _, n := range o.owner {
		out[n]++
	}
	return out
}

// seen collects the values the group consumed, with who consumed each.
type seen struct {
	mu  sync.Mutex
	got map[string][]string
}

func (s *seen) add(who string, v string) {
	s.mu.Lock()
	s.got[v] = append(s.got[v], who)
	s.mu.Unlock()
}

func (s *seen) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.got)
}

// TestConsumerGroupProtocolFranzGo runs franz-go consumers in KIP-848 mode
// (kgo.ServerSideBalancer: the gateway assigns) against a real gateway:
// three members split six partitions, a member leaving hands its
// partitions to the others, and a restarted group resumes at its committed
// offsets; every record is consumed exactly once and no partition is ever
// owned by two members. kadm's DescribeConsumerGroups (ConsumerGroupDescribe)
// and ListGroups show the group as a consumer group.
func TestConsumerGroupProtocolFranzGo(t *testing.T) {
	dir := t.TempDir()
	addr := freeAddr(t)
	gw := startGateway(t, dir, addr)
	defer func() {
		if t.Failed() {
			for _, l := range strings.Split(gw.Logs(), "\n") {
				if strings.Contains(l, "groups") {
					t.Log(l)
				}
			}
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const topic, group = "cp", "kip848"
	adm := kadm.NewClient(mustClient(t, addr))
	if resp, err := adm.CreateTopics(ctx, 6, 1, nil, topic); err != nil || resp[topic].Err != nil {
		t.Fatalf("create topic: %v %v", err, resp[topic].Err)
	}
	producer, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	next := 0
	produce := func(n int) {
		t.Helper()
		var rs []*kgo.Record
		for i := 0; i < n; i++ {
			rs = append(rs, &kgo.Record{Topic: topic, Partition: int32(next % 6), Value: []byte(fmt.Sprintf("v%05d", next))})
			next++
		}
		if err := producer.ProduceSync(ctx, rs...).FirstErr(); err != nil {
			t.Fatalf("produce: %v", err)
		}
	}
	own := &ownership{t: t, owner: map[int32]string{}}
	got := &seen{got: map[string][]string{}}
	commitErrs := make(chan error, 100)
	type member struct {
		cl   *kgo.Client
		stop context.CancelFunc
		done chan struct{}
	}
	start := func(name string) *member {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ClientID(name),
			kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic), kgo.ServerSideBalancer(),
			kgo.Balancers(kgo.CooperativeStickyBalancer()),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxWait(200*time.Millisecond),
			kgo.OnPartitionsAssigned(own.assigned(name)), kgo.OnPartitionsRevoked(own.revoked(name)),
			kgo.OnPartitionsLost(own.revoked(name)), kgo.DisableAutoCommit())
		if err != nil {
			t.Fatal(err)
		}
		mctx, stop := context.WithCancel(ctx)
		m := &member{cl: cl, stop: stop, done: make(chan struct{})}
		go func() {
			defer close(m.done)
			for mctx.Err() == nil {
				fs := cl.PollFetches(mctx)
				fs.EachRecord(func(r *kgo.Record) { got.add(name, string(r.Value)) })
				// Each poll is committed before the next, so a partition
				// that moves carries no uncommitted records with it.
				if rs := fs.Records(); len(rs) > 0 {
					if err := cl.CommitRecords(ctx, rs...); err != nil {
						commitErrs <- fmt.Errorf("%s: commit: %w", name, err)
					}
				}
			}
		}()
		return m
	}
	leave := func(m *member) {
		m.stop()
		<-m.done
		m.cl.Close() // commits what it consumed and leaves (epoch -1)
	}
	waitFor := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(90 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s (owners %v, consumed %d of %d)", what, own.counts(), got.len(), next)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	// balanced: members consumers each own per partitions.
	balanced := func(members, per int) func() bool {
		return func() bool {
			c := own.counts()
			if len(c) != members {
				return false
			}
			for _, n := range c {
				if n != per {
					return false
				}
			}
			return true
		}
	}

	produce(300)
	a, b, c := start("a"), start("b"), start("c")
	waitFor("three members with two partitions each", balanced(3, 2))
	waitFor("300 records consumed", func() bool { return got.len() == 300 })

	dcg, err := adm.DescribeConsumerGroups(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	d := dcg[group]
	if d.Err != nil || d.State != "Stable" || len(d.Members) != 3 || d.AssignorName != "uniform" {
		t.Fatalf("DescribeConsumerGroups: %+v", d)
	}
	lg, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if l := lg[group]; l.ProtocolType != "consumer" || l.GroupType != "consumer" {
		t.Fatalf("ListGroups: %+v", l)
	}

	leave(c)
	waitFor("two members with three partitions each", balanced(2, 3))
	produce(300)
	waitFor("600 records consumed", func() bool { return got.len() == 600 })
	leave(a)
	leave(b)
	offs, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	for p := int32(0); p < 6; p++ {
		if o, ok := offs.Lookup(topic, p); !ok || o.Err != nil || o.At != 100 {
			t.Fatalf("committed offset of partition %d after the members left: %+v, want 100", p, o)
		}
	}

	// A new incarnation of the group resumes at the committed offsets.
	produce(60)
	r := start("r")
	waitFor("660 records consumed", func() bool { return got.len() == 660 })
	waitFor("the restarted member owns every partition", balanced(1, 6))
	leave(r)

	select {
	case err := <-commitErrs:
		t.Fatal(err)
	default:
	}
	own.mu.Lock()
	defer own.mu.Unlock()
	if len(own.bad) > 0 {
		t.Fatalf("double ownership: %v", own.bad)
	}
	got.mu.Lock()
	defer got.mu.Unlock()
	for i := 0; i < next; i++ {
		v := fmt.Sprintf("v%05d", i)
		if n := len(got.got[v]); n != 1 {
			t.Fatalf("%s consumed %d times (by %v), want once", v, n, got.got[v])
		}
	}
	if len(got.got) != next {
		t.Fatalf("consumed %d distinct records, produced %d", len(got.got), next)
	}
}
