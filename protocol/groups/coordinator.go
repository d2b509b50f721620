package groups

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
)

// Defaults of Options, taken from Kafka's broker configuration so that
// clients tuned for Kafka behave the same here.
const (
	defaultMinSessionTimeout = 6 * time.Second  // group.min.session.timeout.ms
	defaultMaxSessionTimeout = 30 * time.Minute // group.max.session.timeout.ms

	// DefaultMaxMetadataBytes is offset.metadata.max.bytes.
	DefaultMaxMetadataBytes = 4096

	// Kafka leaves these unlimited (group.max.size is Int.MaxValue); a
	// gateway open to any client cannot, so they are the bounds of memory
	// and state store a client can claim (limits.go, pending.go).
	DefaultMaxGroupSize         = 1000
	DefaultMaxGroups            = 10000
	DefaultMaxOffsetsPerGroup   = 10000
	DefaultMaxPendingPerClient  = 100
	defaultPendingMemberTimeout = 10 * time.Second

	// DefaultOffsetsRetention is offsets.retention.minutes.
	DefaultOffsetsRetention      = 7 * 24 * time.Hour
	defaultOffsetsRetentionCheck = 10 * time.Minute // offsets.retention.check.interval.ms
)

// Options tune a Coordinator. The zero value is usable.
type Options struct {
	// TopicExists reports whether the gateway serves a partition. Commits
	// for partitions it rejects are answered UNKNOWN_TOPIC_OR_PARTITION and
	// not stored. Nil accepts every partition.
	TopicExists func(topic string, partition int32) bool

	// UnstableOffset reports whether an open transaction staged an offset
	// for a group's partition (TxnOffsetCommit): an OffsetFetch that
	// requires stable offsets is answered UNSTABLE_OFFSET_COMMIT for it,
	// and the client asks again (KIP-447). Nil: none ever is.
	UnstableOffset func(group, topic string, partition int32) bool
	// UnstableGroup reports whether an open transaction staged an offset
	// for any partition of a group: an OffsetFetch of all its offsets that
	// requires stable ones is answered UNSTABLE_OFFSET_COMMIT. Nil: none.
	UnstableGroup func(group string) bool

	// MinSessionTimeout and MaxSessionTimeout bound the session timeout a
	// member may ask for (INVALID_SESSION_TIMEOUT outside). Zero means
	// Kafka's defaults, 6s and 30m.
	MinSessionTimeout time.Duration
	MaxSessionTimeout time.Duration

	// InitialRebalanceDelay holds the first rebalance of an empty group
	// open this long (capped by the rebalance timeout) so that members
	// started together land in one generation. Kafka's default is 3s; zero
	// here completes the first rebalance as soon as every member joined.
	InitialRebalanceDelay time.Duration

	// MaxGroupSize caps the members of one group, pending member ids
	// included (Kafka's group.max.size; GROUP_MAX_SIZE_REACHED). Zero means
	// 1000; negative unlimited.
	MaxGroupSize int

	// MaxGroups caps the groups the coordinator keeps membership state
	// for, and separately the groups with committed offsets: a JoinGroup
	// or OffsetCommit that would add one more is answered
	// COORDINATOR_NOT_AVAILABLE (retriable; room is made as groups empty
	// and offsets expire). Groups already known are unaffected. Zero means
	// 10,000; negative unlimited.
	MaxGroups int

	// MaxOffsetsPerGroup caps the partitions one group has committed
	// offsets for: a commit that would add more is refused whole with
	// INVALID_COMMIT_OFFSET_SIZE (not retriable: the group must commit
	// fewer partitions). Zero means 10,000; negative unlimited.
	MaxOffsetsPerGroup int

	// MaxPendingPerClient caps the member ids handed out with
	// MEMBER_ID_REQUIRED and not joined with yet, per client host; past it
	// a new member's JoinGroup is answered COORDINATOR_NOT_AVAILABLE. Zero
	// means 100; negative unlimited.
	MaxPendingPerClient int

	// PendingMemberTimeout is how long a pending member id lives at most
	// (less when the session timeout is shorter). Zero means 10s.
	PendingMemberTimeout time.Duration

	// MaxMetadataBytes caps the metadata string of a commit
	// (OFFSET_METADATA_TOO_LARGE). Zero means 4096, as Kafka.
	MaxMetadataBytes int

	// OffsetsRetention is Kafka's offsets.retention.minutes: a group with
	// no members loses its committed offsets once it has been empty and
	// without a commit for this long, so a dead group stops pinning the
	// history its offsets point into. Zero means 7 days; negative keeps
	// offsets forever.
	OffsetsRetention time.Duration

	// OffsetsRetentionCheck is how often expired offsets are looked for
	// (offsets.retention.check.interval.ms). Zero means 10 minutes.
	OffsetsRetentionCheck time.Duration

	// Topics lists the gateway's topics by id for the consumer group
	// protocol (KIP-848) and OffsetCommit/OffsetFetch v10. Nil: none.
	Topics Topics

	// ConsumerHeartbeatInterval is the interval consumer-protocol members
	// heartbeat at (group.consumer.heartbeat.interval.ms); zero means 5s.
	// ConsumerSessionTimeout removes a member that did not heartbeat for
	// that long (group.consumer.session.timeout.ms); zero means 45s.
	ConsumerHeartbeatInterval time.Duration
	ConsumerSessionTimeout    time.Duration

	// Now is the clock of offset retention (commit times, when a group
	// emptied, expiry). Nil means time.Now; tests inject their own.
	// Session timeouts and rebalance waits always use the real clock.
	Now func() time.Time
}

func (o Options) withDefaults() Options {
	if o.MinSessionTimeout <= 0 {
		o.MinSessionTimeout = defaultMinSessionTimeout
	}
	if o.MaxSessionTimeout <= 0 {
		o.MaxSessionTimeout = defaultMaxSessionTimeout
	}
	o.MaxGroupSize = limitOrDefault(o.MaxGroupSize, DefaultMaxGroupSize)
	o.MaxGroups = limitOrDefault(o.MaxGroups, DefaultMaxGroups)
	o.MaxOffsetsPerGroup = limitOrDefault(o.MaxOffsetsPerGroup, DefaultMaxOffsetsPerGroup)
	o.MaxPendingPerClient = limitOrDefault(o.MaxPendingPerClient, DefaultMaxPendingPerClient)
	if o.PendingMemberTimeout <= 0 {
		o.PendingMemberTimeout = defaultPendingMemberTimeout
	}
	if o.MaxMetadataBytes <= 0 {
		o.MaxMetadataBytes = DefaultMaxMetadataBytes
	}
	if o.OffsetsRetention == 0 {
		o.OffsetsRetention = DefaultOffsetsRetention
	}
	if o.OffsetsRetentionCheck <= 0 {
		o.OffsetsRetentionCheck = defaultOffsetsRetentionCheck
	}
	if o.ConsumerHeartbeatInterval <= 0 {
		o.ConsumerHeartbeatInterval = defaultConsumerHeartbeatInterval
	}
	if o.ConsumerSessionTimeout <= 0 {
		o.ConsumerSessionTimeout = defaultConsumerSessionTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Coordinator states: requests are refused until committed offsets are
// loaded (as Kafka does while it reads __consumer_offsets) and after Close.
const (
	statusLoading int32 = iota
	statusReady
	statusClosed
)

// Coordinator is the group coordinator of a single-node gateway: this node
// coordinates every group. All group state lives behind one mutex; the
// only goroutines it owns are the timer loop that expires sessions and ends
// rebalance waits, and the offset expiry loop. Committed offsets live in an
// offsetTable with its own locks so that a slow store never blocks
// heartbeats.
type Coordinator struct {
	store OffsetStore
	log   zerolog.Logger
	opts  Options

	status atomic.Int32

	mu     sync.Mutex
	groups map[string]*group
	// pendingByHost counts the pending member ids of each client host
	// (pending.go).
	pendingByHost map[string]int
	nextWake      time.Time // when the timer loop is due to run; zero when idle

	offsets *offsetTable

	// lastView is the newest topic list a consumer heartbeat looked at
	// (adoptView), which the timer loop assigns with when members expire;
	// viewSeq orders views by when they were taken.
	lastView topicView
	viewSeq  atomic.Uint64

	openMu sync.Mutex // serialises Open so offsets are loaded once

	wake       chan struct{} // 1-slot: an earlier deadline than nextWake exists
	quit       chan struct{}
	done       chan struct{}
	expiryDone chan struct{} // closed when the offset expiry loop returned
	closeOnce  sync.Once

	own           ownershipState // which groups this gateway coordinates (ownership.go)
	ownershipDone chan struct{}  // closed when runOwnership returned
}

// New returns a coordinator that keeps committed offsets in store. A nil
// store keeps offsets in memory only (tests, throw-away gateways). The
// coordinator answers COORDINATOR_LOAD_IN_PROGRESS until Open has loaded
// the committed offsets; Close must be called to stop its timer goroutine.
func New(store OffsetStore, log zerolog.Logger, opts Options) *Coordinator {
	opts = opts.withDefaults()
	c := &Coordinator{
		store:   store,
		log:     log.With().Str("component", "groups").Logger(),
		opts:    opts,
		groups:  make(map[string]*group),
		offsets: newOffsetTable(opts.MaxGroups, opts.MaxOffsetsPerGroup),

		pendingByHost: make(map[string]int),
		wake:          make(chan struct{}, 1),
		quit:          make(chan struct{}),
		done:          make(chan struct{}),

		expiryDone: make(chan struct{}),

		own:           ownershipState{next: make(chan takeover, 1)},
		ownershipDone: make(chan struct{}),
	}
	go c.run()
	go c.runOffsetExpiry()
	go c.runOwnership()
	return c
}

// ErrClosed is returned by Open after Close.
var ErrClosed = errors.New("groups: coordinator closed")

// Open loads the committed offsets from the store and starts serving. It
// may be retried after an error; once it succeeded, further calls do
// nothing.
func (c *Coordinator) Open(ctx context.Context) error {
	c.openMu.Lock()
	defer c.openMu.Unlock()
	switch c.status.Load() {
	case statusReady:
		return nil
	case statusClosed:
		return ErrClosed
	}
	if c.store != nil {
		offs, err := c.store.LoadOffsets(ctx)
		if err != nil {
			return fmt.Errorf("groups: load committed offsets: %w", err)
		}
		c.offsets.load(offs)
		c.log.Info().Int("offsets", len(offs)).Msg("loaded committed offsets")
	}
	// Close may have run while we loaded; it wins.
	c.status.CompareAndSwap(statusLoading, statusReady)
	if c.status.Load() == statusClosed {
		return ErrClosed
	}
	return nil
}

// Close answers every waiting JoinGroup and SyncGroup with
// COORDINATOR_NOT_AVAILABLE, stops the timer and offset expiry goroutines
// and waits for them.
// Requests after Close are refused the same way. It is safe to call twice.
func (c *Coordinator) Close() {
	c.closeOnce.Do(func() {
		c.status.Store(statusClosed)
		c.mu.Lock()
		for _, g := range c.groups {
			g.failWaiters(kerr.CoordinatorNotAvailable.Code)
		}
		c.mu.Unlock()
		close(c.quit)
		<-c.done
		<-c.expiryDone
		<-c.ownershipDone
	})
}

// statusCode is the error every request gets while the coordinator cannot
// serve, or 0.
func (c *Coordinator) statusCode() int16 {
	switch c.status.Load() {
	case statusLoading:
		return kerr.CoordinatorLoadInProgress.Code
	case statusClosed:
		return kerr.CoordinatorNotAvailable.Code
	}
	return 0
}

// run is the timer loop. It sleeps until the earliest deadline of any
// group (session expiry, end of a join or sync wait), or until schedule
// reports an earlier one, and then lets every group act on the time.
func (c *Coordinator) run() {
	defer close(c.done)
	t := time.NewTimer(time.Hour)
	t.Stop()
	defer t.Stop()
	for {
		select {
		case <-c.quit:
			return
		case <-c.wake:
		case <-t.C:
		}
		next := c.tick(time.Now())
		t.Stop()
		if !next.IsZero() {
			t.Reset(time.Until(next))
		}
	}
}

// tick applies every deadline that has passed and returns the next one.
func (c *Coordinator) tick(now time.Time) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	var next time.Time
	for name, g := range c.groups {
		g.expire(now)
		if d := g.nextDeadline(); !d.IsZero() && (next.IsZero() || d.Before(next)) {
			next = d
		}
		if g.forgettable() {
			delete(c.groups, name)
		}
	}
	c.nextWake = next
	return next
}

// schedule makes sure the timer loop runs no later than d. Called with
// c.mu held whenever a deadline is set.
func (c *Coordinator) schedule(d time.Time) {
	if !c.nextWake.IsZero() && !d.Before(c.nextWake) {
		return
	}
	c.nextWake = d
	select {
	case c.wake <- struct{}{}:
	default: // a wake-up is already pending; it will see d
	}
}

// group returns the group named name, creating it when create is set
// and MaxGroups leaves room: nil otherwise. Called with c.mu held.
func (c *Coordinator) group(name string, create bool) *group {
	g := c.groups[name]
	if g == nil && create && !atLimit(len(c.groups), c.opts.MaxGroups) {
		g = newGroup(c, name)
		c.groups[name] = g
	}
	return g
}

// forget drops g from the map when nothing refers to it any more, so that
// random group names (kcat, console consumers) do not pile up. Called with
// c.mu held.
func (c *Coordinator) forget(g *group) {
	if g.forgettable() && c.groups[g.name] == g {
		delete(c.groups, g.name)
	}
}
