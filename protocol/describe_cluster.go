package protocol

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeCluster (key 60)
//
// v0: brokers, cluster id, controller id (always flexible). v1: endpoint
// type (brokers only here). v2: fenced brokers on request (KIP-1073,
// `kafka-cluster list-endpoints --include-fenced-brokers`): this gateway is
// never fenced.
func init() { register(kmsg.DescribeCluster, 0, 2, handleDescribeCluster) }

func handleDescribeCluster(_ context.Context, c *conn, req *kmsg.DescribeClusterRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeClusterResponse)
	resp.ClusterID = c.s.cfg.ClusterID
	view := c.s.view()
	resp.ControllerID = controllerID(view)
	resp.EndpointType = 1
	for _, n := range view.Nodes {
		b := kmsg.NewDescribeClusterResponseBroker()
		b.NodeID, b.Host, b.Port = n.ID, n.Host, n.Port
		resp.Brokers = append(resp.Brokers, b)
	}
	return resp, nil
}
