package protocol

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// ApiVersions (key 18)
//
// v1: throttle. v2: nothing new. v3: flexible; client software name and
// version; finalized features in tags. v4: nothing new (KIP-511 follow-up).
// An unknown version is answered in v0 form with UNSUPPORTED_VERSION
// (request.go) so the client can retry with one we speak.
func init() { register(kmsg.ApiVersions, 0, 4, handleApiVersions) }

func handleApiVersions(_ context.Context, c *conn, req *kmsg.ApiVersionsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ApiVersionsResponse)
	resp.ApiKeys = supportedApiKeys()
	c.log.Debug().Str("client_software", req.ClientSoftwareName).Str("client_version", req.ClientSoftwareVersion).Msg("api versions")
	return resp, nil
}
