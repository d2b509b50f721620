package protocol

import (
	"context"
	"github.com/lakegw/lakegw/cluster"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Metadata (key 3)
//
// v1: null topics = all (v0: empty = all); controller id; is_internal.
// v2: cluster id. v3: throttle. v4: allow auto topic creation (ignored:
// topics are tables). v5: offline replicas. v7: leader epoch. v8:
// authorized operations. v9: flexible. v10: topic ids (we give the table
// UUID, stable on every gateway). v11: cluster authorized ops removed.
// v12: topic ids in requests may be used without names. v13: a top-level
// error code (KIP-1102), which a broker sets to REBOOTSTRAP_REQUIRED when
// the client should bootstrap again; never here (0): this gateway's
// metadata is whole whenever it answers.
//
// A topic's partitions (leader, epoch, replicas) are described here once,
// for Metadata and for DescribeTopicPartitions.
func init() { register(kmsg.Metadata, 0, 13, handleMetadata) }

func handleMetadata(_ context.Context, c *conn, req *kmsg.MetadataRequest) (kmsg.Response, error) {
	s := c.s
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	view := s.view()
	for _, n := range view.Nodes {
		b := kmsg.NewMetadataResponseBroker()
		b.NodeID, b.Host, b.Port = n.ID, n.Host, n.Port
		resp.Brokers = append(resp.Brokers, b)
	}
	clusterID := s.cfg.ClusterID
	resp.ClusterID = &clusterID
	resp.ControllerID = controllerID(view)

	all := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	if all {
		for _, t := range s.reg.Topics() {
			resp.Topics = append(resp.Topics, c.topicMetadata(view, t.Name))
		}
		return resp, nil
	}
	for _, rt := range req.Topics {
		switch {
		case rt.Topic != nil:
			resp.Topics = append(resp.Topics, c.topicMetadata(view, *rt.Topic))
		default:
			resp.Topics = append(resp.Topics, c.topicMetadataByID(view, rt.TopicID))
		}
	}
	return resp, nil
}

// controllerID is the gateway named controller: the lowest live node id
// (no gateway controls the others; admin clients only need a live one).
// -1 when a fenced gateway knows no other.
func controllerID(v *cluster.View) int32 {
	if len(v.Nodes) == 0 {
		return -1
	}
	return v.Nodes[0].ID
}

func (c *conn) topicMetadata(view *cluster.View, name string) kmsg.MetadataResponseTopic {
	mt := kmsg.NewMetadataResponseTopic()
	n := name
	mt.Topic = &n
	t, ok := c.s.reg.Topic(name)
	if !ok {
		mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
		return mt
	}
	mt.TopicID = t.ID
	epoch := t.Index.LeaderEpoch()
	for p := int32(0); p < t.Index.Partitions(); p++ {
		mp := kmsg.NewMetadataResponseTopicPartition()
		mp.Partition = p
		leader := c.s.leaderOf(view, name, p).ID
		if leader < 0 {
			mp.ErrorCode = kerr.LeaderNotAvailable.Code
		}
		mp.Leader = leader
		mp.LeaderEpoch = epoch
		mp.Replicas = []int32{leader}
		mp.ISR = []int32{leader}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}

func (c *conn) topicMetadataByID(view *cluster.View, id [16]byte) kmsg.MetadataResponseTopic {
	if t, ok := c.s.reg.TopicByID(id); ok {
		return c.topicMetadata(view, t.Name)
	}
	mt := kmsg.NewMetadataResponseTopic()
	mt.TopicID = id
	mt.ErrorCode = kerr.UnknownTopicID.Code
	return mt
}
