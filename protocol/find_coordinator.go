package protocol

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FindCoordinator (key 10)
//
// v1: coordinator type (group or transaction), error message. v2: nothing
// new. v3: flexible. v4: batched keys (KIP-699). v5: TRANSACTION_ABORTABLE
// may be returned (KIP-890; never here). v6: key type 2, a share group's
// share-partition key (KIP-932). This gateway coordinates every group
// itself, and every transactional id when it takes writes. It has no share
// groups: a share key is INVALID_REQUEST, as a Kafka broker without a share
// coordinator answers it (KafkaApis.getCoordinator: INVALID_REQUEST below
// v6 and when shareCoordinator is empty), and so is an unknown key type.
// Errors name no node (Kafka's Node.noNode: id -1, no host, port -1).
func init() { register(kmsg.FindCoordinator, 0, 6, handleFindCoordinator) }

// FindCoordinator's key types.
const (
	coordinatorGroup       = 0
	coordinatorTransaction = 1
	coordinatorShare       = 2
)

func handleFindCoordinator(_ context.Context, c *conn, req *kmsg.FindCoordinatorRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	code := int16(0)
	var msg *string
	switch {
	case req.CoordinatorType == coordinatorTransaction && c.s.txn == nil:
		code = kerr.CoordinatorNotAvailable.Code
		m := "this lakegw takes no writes, so no transactions: its topics are read-only"
		msg = &m
	case req.CoordinatorType == coordinatorTransaction && c.s.inCluster():
		// A transaction coordinator keeps its ids in memory, loaded at
		// start: it cannot take them over from a gateway that died.
		code = kerr.CoordinatorNotAvailable.Code
		m := "transactions are not available on gateways sharing a state store yet: run one gateway per state store for transactional producers"
		msg = &m
	case req.CoordinatorType == coordinatorShare:
		code = kerr.InvalidRequest.Code
		m := "this lakegw has no share groups"
		msg = &m
	case req.CoordinatorType != coordinatorGroup && req.CoordinatorType != coordinatorTransaction:
		code = kerr.InvalidRequest.Code
		m := "unknown coordinator type"
		msg = &m
	}
	view := c.s.view()
	// coordinator answers one key: the gateway coordinating it, or none
	// (a fenced gateway that knows no other: retriable).
	coordinator := func(key string) (int16, *string, int32, string, int32) {
		if code != 0 {
			return code, msg, -1, "", -1
		}
		n := view.Coordinator(key)
		if n.ID < 0 {
			return kerr.CoordinatorNotAvailable.Code, kmsg.StringPtr("no gateway coordinates it now"), -1, "", -1
		}
		return 0, nil, n.ID, n.Host, n.Port
	}
	if req.Version < 4 {
		resp.ErrorCode, resp.ErrorMessage, resp.NodeID, resp.Host, resp.Port = coordinator(req.CoordinatorKey)
		return resp, nil
	}
	for _, key := range req.CoordinatorKeys {
		rc := kmsg.NewFindCoordinatorResponseCoordinator()
		rc.Key = key
		rc.ErrorCode, rc.ErrorMessage, rc.NodeID, rc.Host, rc.Port = coordinator(key)
		resp.Coordinators = append(resp.Coordinators, rc)
	}
	return resp, nil
}
