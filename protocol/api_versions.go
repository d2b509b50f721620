package protocol

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ApiVersions (key 18)
//
// v1: throttle. v2: nothing new. v3: flexible; client software name and
// version; finalized features in tags. v4: nothing new (KIP-511 follow-up).
// v5: the cluster id and node id the client means to reach (KIP-1242):
// both null/-1 while bootstrapping; one set without the other is
// INVALID_REQUEST (Kafka's ApiVersionsRequest.isValid), and both set but
// naming another cluster or node is REBOOTSTRAP_REQUIRED, so that a client
// whose address now reaches another cluster learns it at once.
// An unknown version is answered in v0 form with UNSUPPORTED_VERSION
// (request.go) so the client can retry with one we speak.
func init() { register(kmsg.ApiVersions, 0, 5, handleApiVersions) }

func handleApiVersions(_ context.Context, c *conn, req *kmsg.ApiVersionsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	c.log.Debug().Str("client_software", req.ClientSoftwareName).Str("client_version", req.ClientSoftwareVersion).Msg("api versions")
	if req.Version >= 5 {
		switch hasCluster, hasNode := req.ClusterID != nil, req.NodeID != -1; {
		case hasCluster != hasNode:
			resp.ErrorCode = kerr.InvalidRequest.Code
			return resp, nil
		case hasCluster && (*req.ClusterID != c.s.cfg.ClusterID || req.NodeID != c.s.cfg.NodeID):
			resp.ErrorCode = kerr.RebootstrapRequired.Code
			return resp, nil
		}
	}
	resp.ApiKeys = supportedApiKeys()
	return resp, nil
}
