package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"time"

	"github.com/rs/zerolog"

	"github.com/lakegw/lakegw/cluster"
	"github.com/lakegw/lakegw/produce"
	"github.com/lakegw/lakegw/protocol"
	"github.com/lakegw/lakegw/protocol/groups"
	"github.com/lakegw/lakegw/state"
	"github.com/lakegw/lakegw/topics"
)

// clusterFlags are serve's flags for gateways sharing a state store.
type clusterFlags struct {
	shared    *bool
	nodeID    *int
	heartbeat *time.Duration
	lease     *time.Duration
}

func addClusterFlags(fs *flag.FlagSet) *clusterFlags {
	c := &clusterFlags{
		shared: fs.Bool("cluster", false, "share the state store (--state postgres://...) and the catalog (--catalog-prop) with other gateways: "+
			"each leads some partitions and coordinates some groups, and takes over those of a gateway that dies"),
		nodeID: fs.Int("node-id", 0, "this gateway's Kafka node id, unique among the gateways of a --cluster"),
		heartbeat: fs.Duration("cluster-heartbeat-interval", cluster.DefaultHeartbeatInterval,
			"how often a --cluster gateway renews its membership in the state store"),
		lease: fs.Duration("cluster-lease", cluster.DefaultLease,
			"a --cluster gateway that renewed nothing for this long is dead: its partitions and groups move to the others"),
	}
	return c
}

// check refuses a cluster the gateways could not share.
func (c *clusterFlags) check(common *commonFlags) error {
	if *c.nodeID < 0 || *c.nodeID > 1<<30 {
		return fmt.Errorf("--node-id %d: want 0 to %d", *c.nodeID, 1<<30)
	}
	if !*c.shared {
		return nil
	}
	if !state.IsPostgresURL(*common.state) {
		return errors.New("--cluster needs a state store the gateways share (--state postgres://USER:PASSWORD@HOST/DB)")
	}
	if len(common.catalogProps) == 0 {
		return errors.New("--cluster needs a catalog the gateways share (--catalog-prop type=sql|rest ...), not the embedded one in --data-dir")
	}
	return nil
}

// join makes srv a member of the gateways sharing store: it registers,
// hands the group coordinator the groups it now coordinates at every
// change, and returns the heartbeat task. A lone gateway (no --cluster)
// leads everything and returns no task.
func (c *clusterFlags) join(ctx context.Context, srv *protocol.Server, store *state.Store, coord *groups.Coordinator, writes *produce.Service,
	defaults topics.TopicConfig, log zerolog.Logger) (*task, error) {
	if !*c.shared {
		return nil, nil
	}
	self := srv.Self()
	self.Defaults = fmt.Sprintf("partitions=%d format=%s compression=%s schema-mode=%s batch-records=%d",
		defaults.Partitions, defaults.Format, defaults.Compression, defaults.SchemaMode, defaults.BatchRecords)
	m, err := cluster.New(self, store, cluster.Options{HeartbeatInterval: *c.heartbeat, Lease: *c.lease, Log: log})
	if err != nil {
		return nil, err
	}
	if err := m.Join(ctx); err != nil {
		return nil, err
	}
	if err := store.FenceGroupWrites(m.WriteBound()); err != nil {
		return nil, err
	}
	srv.UseMembership(m)
	m.Watch(func(old, cur *cluster.View) {
		grace := handoverGrace(m, old, cur, self.ID)
		coord.SetOwnership(cur.ShardsOf(self.ID), grace)
		srv.WritesFrom(time.Now().Add(grace))
		// A writer is kept only across views that both gave this gateway
		// its table: one created by a produce racing a change is dropped
		// at the next, and a table led again starts a fresh writer.
		writes.ReleaseUnless(func(topic string) bool {
			return old != nil && srv.LeadsIn(old, topic, 0) && srv.LeadsIn(cur, topic, 0)
		})
	})
	return &task{name: "cluster membership", run: m.Run, early: true}, nil
}

// handoverGrace is how long the group shards self gains from old to cur
// wait before it serves them: none when their coordinators in old are all
// dead in cur (they fenced themselves before the others counted them
// dead), else long enough for a live one to learn it lost them. The first
// view (old nil), and the first after a fence (whose view of the others
// is stale), take over from whoever may run them now.
func handoverGrace(m *cluster.Membership, old, cur *cluster.View, self int32) time.Duration {
	if old == nil || old.Fenced {
		if len(cur.Nodes) > 1 {
			return m.HandoverGrace()
		}
		return 0
	}
	mine := cur.ShardsOf(self)
	for s := range mine {
		if !mine[s] {
			continue
		}
		prev := old.ShardCoordinator(int32(s)).ID
		if _, alive := cur.Node(prev); prev != self && alive {
			return m.HandoverGrace()
		}
	}
	return 0
}

// mine reports whether this gateway does a topic's table work (compaction,
// maintenance): the leader of its partition 0, so one gateway at a time.
func mine(srv *protocol.Server) func(topic string) bool {
	return func(topic string) bool { return srv.Leads(topic, 0) }
}

// committedSource is where history pins read committed offsets: a lone
// gateway's coordinator holds every group; gateways sharing a store each
// hold some, so they read the store.
func (c *clusterFlags) committedSource(store *state.Store, coord *groups.Coordinator) committedOffsets {
	if *c.shared {
		return storeOffsets{store}
	}
	return coordinatorOffsets{coord}
}

type storeOffsets struct{ s *state.Store }

func (o storeOffsets) CommittedOffsets(ctx context.Context, topic string) ([]groups.CommittedOffset, error) {
	return o.s.TopicOffsets(ctx, topic)
}
