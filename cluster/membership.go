package cluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
)

// Registry is where gateways announce themselves: the shared state store.
type Registry interface {
	// Heartbeat records n alive now, held by instance (one process's
	// random id), and returns the live nodes, those whose heartbeat is
	// within lease, by id. It fails with ErrNodeIDTaken when another
	// instance holds n.ID and is alive.
	Heartbeat(ctx context.Context, n Node, instance string, lease time.Duration) ([]Node, error)
	// Leave removes n's row if instance still holds it.
	Leave(ctx context.Context, id int32, instance string) error
}

// ErrNodeIDTaken: another live gateway runs with the same node id.
var ErrNodeIDTaken = errors.New("another live gateway has this node id")

// ErrDefaultsDiffer: another live gateway serves tables with other topic
// defaults; their offsets and batches would differ.
var ErrDefaultsDiffer = errors.New("another live gateway runs with other topic defaults")

// Defaults of the membership's timing: a gateway that stops heartbeating
// is dead after DefaultLease, and its partitions and groups move then.
const (
	DefaultHeartbeatInterval = time.Second
	DefaultLease             = 6 * time.Second
)

// Options time the heartbeats.
type Options struct {
	HeartbeatInterval time.Duration
	Lease             time.Duration
	Log               zerolog.Logger
}

// Membership is this gateway's view of the live gateways.
type Membership struct {
	self     Node
	instance string
	reg      Registry // nil: a cluster of one
	opts     Options

	view atomic.Pointer[View]
	// joinSent is when Join's heartbeat was sent: Run counts the fence
	// from it, however long the gateway took to start heartbeating.
	joinSent time.Time

	mu       sync.Mutex
	watchers []func(old, cur *View)
}

// View is one set of live gateways, sorted by node id, with what follows
// from it. It is immutable.
type View struct {
	Nodes []Node
	// Version counts the changes this gateway saw.
	Version uint64
	// Fenced: this gateway lost touch with the state store; Nodes are the
	// others as last seen, and it owns nothing.
	Fenced bool
}

// Single is the membership of a lone gateway: it leads and coordinates
// everything.
func Single(self Node) *Membership {
	m := &Membership{self: self}
	m.view.Store(&View{Nodes: []Node{self}, Version: 1})
	return m
}

// New is the membership of a gateway among others sharing reg. Join must
// succeed before it answers anything.
func New(self Node, reg Registry, opts Options) (*Membership, error) {
	if opts.HeartbeatInterval <= 0 {
		opts.HeartbeatInterval = DefaultHeartbeatInterval
	}
	if opts.Lease <= 0 {
		opts.Lease = DefaultLease
	}
	if opts.Lease < 4*opts.HeartbeatInterval {
		return nil, fmt.Errorf("cluster: the lease (%s) must be at least four heartbeat intervals (%s): a gateway fences itself after three quarters of it, and one late heartbeat must not do that",
			opts.Lease, opts.HeartbeatInterval)
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("cluster: instance id: %w", err)
	}
	m := &Membership{self: self, instance: hex.EncodeToString(b[:]), reg: reg, opts: opts}
	m.view.Store(&View{Nodes: []Node{self}})
	return m, nil
}

// Shared reports whether other gateways may join this one's cluster.
func (m *Membership) Shared() bool { return m.reg != nil }

// Self is this gateway.
func (m *Membership) Self() Node { return m.self }

// Current is the live set as last seen.
func (m *Membership) Current() *View { return m.view.Load() }

// Watch has fn called with each new view (from the heartbeat goroutine, in
// order), and once now with the current one.
func (m *Membership) Watch(fn func(old, cur *View)) {
	m.mu.Lock()
	m.watchers = append(m.watchers, fn)
	m.mu.Unlock()
	fn(nil, m.view.Load())
}

// Join registers this gateway and takes the first view of the others.
func (m *Membership) Join(ctx context.Context) error {
	if m.reg == nil {
		return nil
	}
	sent := time.Now()
	nodes, err := m.reg.Heartbeat(ctx, m.self, m.instance, m.opts.Lease)
	if err != nil {
		return fmt.Errorf("cluster: join as %s: %w", m.self, err)
	}
	for _, n := range nodes {
		if n.ID != m.self.ID && n.Defaults != m.self.Defaults {
			// Leave at once: the others must not wait a lease for it.
			lerr := m.reg.Leave(ctx, m.self.ID, m.instance)
			return errors.Join(fmt.Errorf("cluster: join as %s: %w: node %d runs with %q, this one with %q (set the same flags, or the tables' lakegw.* properties)",
				m.self, ErrDefaultsDiffer, n.ID, n.Defaults, m.self.Defaults), lerr)
		}
	}
	m.joinSent = sent
	m.adopt(nodes)
	m.opts.Log.Info().Int32("node_id", m.self.ID).Int("live", len(nodes)).Msg("joined the gateways")
	return nil
}

// Run heartbeats until ctx ends, then fences itself and leaves, so that
// the others take over at once instead of after the lease.
//
// A gateway whose heartbeats fail fences itself before the others can
// count it dead: from fenceAfter past the sending of its last successful
// heartbeat it leads and coordinates nothing, so two gateways never both
// answer for one partition or group. Its next successful heartbeat brings
// it back, and what it then owns it loads afresh (the watchers see it gain
// everything), since others may have changed it meanwhile.
func (m *Membership) Run(ctx context.Context) error {
	if m.reg == nil {
		<-ctx.Done()
		return nil
	}
	t := time.NewTicker(m.opts.HeartbeatInterval)
	defer t.Stop()
	lastOK := m.joinSent // when the last successful heartbeat was sent
	// The fence does not wait for a heartbeat to fail: one that hangs
	// would hold it past the lease. It fires at lastOK + fenceAfter, and
	// no heartbeat runs past that.
	fence := time.NewTimer(time.Until(lastOK.Add(m.fenceAfter())))
	defer fence.Stop()
	for {
		select {
		case <-ctx.Done():
			// Stop answering for anything before the others take over:
			// the server may still be draining requests.
			m.fence()
			lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), m.opts.HeartbeatInterval)
			defer cancel()
			if err := m.reg.Leave(lctx, m.self.ID, m.instance); err != nil {
				m.opts.Log.Warn().Err(err).Msg("leaving the gateways (the others take over after the lease)")
			}
			return nil
		case <-fence.C:
			m.fenceFor(lastOK)
			continue
		case <-t.C:
		}
		sent := time.Now()
		timeout := m.opts.HeartbeatInterval
		switch left := lastOK.Add(m.fenceAfter()).Sub(sent); {
		case left <= 0:
			// The deadline passed while the tick won the race with the
			// fence timer: fence before trying again.
			m.fenceFor(lastOK)
		case left < timeout:
			timeout = left
		}
		hctx, cancel := context.WithTimeout(ctx, timeout)
		nodes, err := m.reg.Heartbeat(hctx, m.self, m.instance, m.opts.Lease)
		cancel()
		switch {
		case errors.Is(err, ErrNodeIDTaken):
			return fmt.Errorf("cluster: %s: %w", m.self, err)
		case err != nil && ctx.Err() == nil:
			m.opts.Log.Warn().Err(err).Dur("since_last_heartbeat", time.Since(lastOK)).Msg("heartbeat to the state store failed")
		case err == nil:
			if sent.Sub(lastOK) >= m.fenceAfter() {
				// Past the fence deadline (a pause; a timer that lost
				// the race): the others may have taken over. Fenced
				// first, the watchers see this gateway gain everything
				// it owns again, and take it over afresh.
				m.fence()
			}
			lastOK = sent
			if !fence.Stop() {
				select { // drain a fire not yet received
				case <-fence.C:
				default:
				}
			}
			fence.Reset(time.Until(lastOK.Add(m.fenceAfter())))
			m.adopt(nodes)
		}
	}
}

// fenceAfter is how long after sending its last successful heartbeat a
// gateway stops answering for anything: three quarters of the lease,
// leaving the rest for clocks that run at different rates and for the
// heartbeat's own trip.
func (m *Membership) fenceAfter() time.Duration { return m.opts.Lease * 3 / 4 }

// fenceFor fences the gateway, whose last successful heartbeat was sent
// at lastOK, and says so once.
func (m *Membership) fenceFor(lastOK time.Time) {
	if m.fence() {
		m.opts.Log.Error().Dur("since_last_heartbeat", time.Since(lastOK)).
			Msg("no heartbeat reached the state store for most of the lease: leading and coordinating nothing until one does")
	}
}

// fence makes the view one in which this gateway owns nothing (the others
// as last seen lead and coordinate); false if it was fenced already.
func (m *Membership) fence() bool {
	old := m.view.Load()
	if old.Fenced {
		return false
	}
	others := slices.DeleteFunc(slices.Clone(old.Nodes), func(n Node) bool { return n.ID == m.self.ID })
	m.publish(old, &View{Nodes: others, Version: old.Version + 1, Fenced: true})
	return true
}

// adopt makes nodes the view when they differ from it.
func (m *Membership) adopt(nodes []Node) {
	nodes = slices.Clone(nodes)
	slices.SortFunc(nodes, func(a, b Node) int { return int(a.ID) - int(b.ID) })
	if !slices.ContainsFunc(nodes, func(n Node) bool { return n.ID == m.self.ID }) {
		// The store answered before our own row was visible: we are
		// alive whatever it says.
		nodes = append(nodes, m.self)
		slices.SortFunc(nodes, func(a, b Node) int { return int(a.ID) - int(b.ID) })
	}
	old := m.view.Load()
	if slices.Equal(old.Nodes, nodes) && old.Version > 0 && !old.Fenced {
		return
	}
	m.publish(old, &View{Nodes: nodes, Version: old.Version + 1})
}

// publish makes cur the view and tells the watchers.
func (m *Membership) publish(old, cur *View) {
	m.view.Store(cur)
	m.opts.Log.Info().Interface("live", ids(cur.Nodes)).Uint64("view", cur.Version).Bool("fenced", cur.Fenced).Msg("gateways changed")
	m.mu.Lock()
	watchers := slices.Clone(m.watchers)
	m.mu.Unlock()
	for _, fn := range watchers {
		fn(old, cur)
	}
}

func ids(nodes []Node) []int32 {
	out := make([]int32, len(nodes))
	for i, n := range nodes {
		out[i] = n.ID
	}
	return out
}

// Leader is the gateway leading a topic partition (Node{ID: -1} when a
// fenced gateway knows no other).
func (v *View) Leader(topic string, partition int32) Node {
	return owner(v.Nodes, partitionItem(topic, partition))
}

// ShardCoordinator is the gateway coordinating the groups and
// transactional ids of a shard (Node{ID: -1} when a fenced gateway knows
// no other).
func (v *View) ShardCoordinator(shard int32) Node { return owner(v.Nodes, shardItem(shard)) }

// Coordinator is the gateway coordinating a group or transactional id.
func (v *View) Coordinator(key string) Node { return v.ShardCoordinator(Shard(key)) }

// ShardsOf is the set of group shards node id coordinates in v.
func (v *View) ShardsOf(id int32) (owned [GroupShards]bool) {
	for s := range owned {
		owned[s] = v.ShardCoordinator(int32(s)).ID == id
	}
	return owned
}

// HandoverGrace is how long a gateway that gains a shard from a live one
// waits before serving it: until the live one has surely seen the view
// that took the shard away (its next heartbeat) or fenced itself.
func (m *Membership) HandoverGrace() time.Duration {
	return m.fenceAfter() + m.opts.HeartbeatInterval
}

// WriteBound is how long a write the gateway decided as a shard's owner
// may take: well within HandoverGrace, so that the shard cannot leave and
// come back while the write is under way.
func (m *Membership) WriteBound() time.Duration { return m.opts.Lease / 4 }

// Node is the live gateway with id, if any.
func (v *View) Node(id int32) (Node, bool) {
	i := slices.IndexFunc(v.Nodes, func(n Node) bool { return n.ID == id })
	if i < 0 {
		return Node{}, false
	}
	return v.Nodes[i], true
}
