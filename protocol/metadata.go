package protocol

import (
	"context"

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

const nodeID int32 = 0

func handleMetadata(_ context.Context, c *conn, req *kmsg.MetadataRequest) (kmsg.Response, error) {
	s := c.s
	resp := req.ResponseKind().(*kmsg.MetadataResponse)
	b := kmsg.NewMetadataResponseBroker()
	b.NodeID, b.Host, b.Port = nodeID, s.advertHost, s.advertPort
	resp.Brokers = []kmsg.MetadataResponseBroker{b}
	clusterID := s.cfg.ClusterID
	resp.ClusterID = &clusterID
	resp.ControllerID = nodeID

	all := req.Topics == nil || (req.Version == 0 && len(req.Topics) == 0)
	if all {
		for _, t := range s.reg.Topics() {
			resp.Topics = append(resp.Topics, c.topicMetadata(t.Name))
		}
		return resp, nil
	}
	for _, rt := range req.Topics {
		switch {
		case rt.Topic != nil:
			resp.Topics = append(resp.Topics, c.topicMetadata(*rt.Topic))
		default:
			resp.Topics = append(resp.Topics, c.topicMetadataByID(rt.TopicID))
		}
	}
	return resp, nil
}

func (c *conn) topicMetadata(name string) kmsg.MetadataResponseTopic {
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
		mp.Leader = nodeID
		mp.LeaderEpoch = epoch
		mp.Replicas = []int32{nodeID}
		mp.ISR = []int32{nodeID}
		mt.Partitions = append(mt.Partitions, mp)
	}
	return mt
}

func (c *conn) topicMetadataByID(id [16]byte) kmsg.MetadataResponseTopic {
	if t, ok := c.s.reg.TopicByID(id); ok {
		return c.topicMetadata(t.Name)
	}
	mt := kmsg.NewMetadataResponseTopic()
	mt.TopicID = id
	mt.ErrorCode = kerr.UnknownTopicID.Code
	return mt
}
