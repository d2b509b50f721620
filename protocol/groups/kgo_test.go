package groups

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// owned tracks the partitions a client currently owns, from kgo's
// assignment callbacks.
type owned struct {
	mu    sync.Mutex
	parts map[int32]bool
}

func (o *owned) assigned(_ context.Context, _ *kgo.Client, m map[string][]int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, p := range m["t"] {
		o.parts[p] = true
	}
}

func (o *owned) revoked(_ context.Context, _ *kgo.Client, m map[string][]int32) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, p := range m["t"] {
		delete(o.parts, p)
	}
}

func (o *owned) list() []int32 {
	o.mu.Lock()
	defer o.mu.Unlock()
	var ps []int32
	for p := range o.parts {
		ps = append(ps, p)
	}
	slices.Sort(ps)
	return ps
}

// consumer is a kgo group consumer polling in the background.
type consumer struct {
	cl     *kgo.Client
	own    *owned
	cancel context.CancelFunc
	done   chan struct{}
}

func startConsumer(t *testing.T, addr, name string) *consumer {
	t.Helper()
	own := &owned{parts: make(map[int32]bool)}
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(addr),
		kgo.ClientID(name),
		kgo.ConsumerGroup("it-group"),
		kgo.ConsumeTopics("t"),
		kgo.Balancers(kgo.RangeBalancer()),
		kgo.SessionTimeout(6*time.Second),
		kgo.RebalanceTimeout(5*time.Second),
		kgo.HeartbeatInterval(100*time.Millisecond),
		kgo.FetchMaxWait(200*time.Millisecond),
		kgo.DisableAutoCommit(),
		kgo.OnPartitionsAssigned(own.assigned),
		kgo.OnPartitionsRevoked(own.revoked),
		kgo.OnPartitionsLost(own.revoked),
	)
	if err != nil {
		t.Fatalf("new client %s: %v", name, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c := &consumer{cl: cl, own: own, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(c.done)
		for ctx.Err() == nil {
			c.cl.PollFetches(ctx)
		}
	}()
	return c
}

// stop stops polling and closes the client, which leaves the group.
func (c *consumer) stop() {
	c.cancel()
	<-c.done
	c.cl.Close()
}

func eventually(t *testing.T, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestFranzGoGroupConsumers runs two real kgo group consumers against the
// coordinator behind a minimal broker: they split the partitions, commit,
// and the survivor takes everything when the other leaves.
func TestFranzGoGroupConsumers(t *testing.T) {
	store := newMemStore()
	c := newOpened(t, store, Options{
		TopicExists: func(topic string, p int32) bool { return topic == "t" && p >= 0 && p < 3 },
		Topics:      fakeTopics{{Name: "t", ID: testTopicID, Partitions: 3}},
	})
	b, err := startTestBroker(c, "t", 3)
	if err != nil {
		t.Fatal(err)
	}
	defer b.close()

	a := startConsumer(t, b.addr(), "consumer-a")
	defer a.stop()
	eventually(t, "a owns all partitions", 10*time.Second, func() bool {
		return slices.Equal(a.own.list(), []int32{0, 1, 2})
	})

	bc := startConsumer(t, b.addr(), "consumer-b")
	bStopped := false
	defer func() {
		if !bStopped {
			bc.stop()
		}
	}()
	eventually(t, "a and b split the partitions", 10*time.Second, func() bool {
		pa, pb := a.own.list(), bc.own.list()
		if len(pa) == 0 || len(pb) == 0 || len(pa)+len(pb) != 3 {
			return false
		}
		union := slices.Concat(pa, pb)
		slices.Sort(union)
		return slices.Equal(union, []int32{0, 1, 2})
	})
	t.Logf("a owns %v, b owns %v", a.own.list(), bc.own.list())

	// Each consumer commits its own partitions through kgo.
	commit := func(cons *consumer, base int64) {
		t.Helper()
		offs := make(map[int32]kgo.EpochOffset)
		for _, p := range cons.own.list() {
			offs[p] = kgo.EpochOffset{Epoch: 0, Offset: base + int64(p)}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		var cerr error
		cons.cl.CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{"t": offs},
			func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
				cerr = err
				for _, rt := range resp.Topics {
					for _, rp := range rt.Partitions {
						if e := kerr.ErrorForCode(rp.ErrorCode); e != nil && cerr == nil {
							cerr = e
						}
					}
				}
			})
		if cerr != nil {
			t.Fatalf("commit: %v", cerr)
		}
	}
	commit(a, 100)
	commit(bc, 100)

	// Read them back over the wire with kadm (OffsetFetch).
	adm := kadm.NewClient(a.cl)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	fetched, err := adm.FetchOffsets(ctx, "it-group")
	if err != nil {
		t.Fatalf("fetch offsets: %v", err)
	}
	for p := int32(0); p < 3; p++ {
		o, ok := fetched.Lookup("t", p)
		if !ok || o.Err != nil || o.At != 100+int64(p) {
			t.Fatalf("partition %d: committed %+v (found %v), want %d", p, o, ok, 100+p)
		}
	}

	// b leaves: a gets every partition back.
	bc.stop()
	bStopped = true
	eventually(t, "a owns all partitions after b left", 10*time.Second, func() bool {
		return slices.Equal(a.own.list(), []int32{0, 1, 2})
	})
	commit(a, 200)
	if n, _ := store.count(); n != 3 {
		t.Fatalf("store holds %d offsets, want 3", n)
	}

	dg, err := adm.DescribeGroups(ctx, "it-group")
	if err != nil {
		t.Fatalf("describe: %v", err)
	}
	g := dg["it-group"]
	if g.State != "Stable" || len(g.Members) != 1 || g.Members[0].ClientID != "consumer-a" {
		t.Fatalf("describe after b left: state %s, members %+v", g.State, g.Members)
	}
}
