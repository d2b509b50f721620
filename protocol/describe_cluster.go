package protocol

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeCluster (key 60)
//
// v0: brokers, cluster id, controller id (always flexible). v1: endpoint
// type (brokers only here).
func init() { register(kmsg.DescribeCluster, 0, 1, handleDescribeCluster) }

func handleDescribeCluster(_ context.Context, c *conn, req *kmsg.DescribeClusterRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.ClusterID = c.s.cfg.ClusterID
	resp.ControllerID = nodeID
	resp.EndpointType = 1
	b := kmsg.NewDescribeClusterResponseBroker()
	b.NodeID, b.Host, b.Port = nodeID, c.s.advertHost, c.s.advertPort
	resp.Brokers = []kmsg.DescribeClusterResponseBroker{b}
	return resp, nil
}
