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
	case req.CoordinatorType == coordinatorShare:
		code = kerr.InvalidRequest.Code
		m := "this lakegw has no share groups"
		msg = &m
	case req.CoordinatorType != coordinatorGroup && req.CoordinatorType != coordinatorTransaction:
		code = kerr.InvalidRequest.Code
		m := "unknown coordinator type"
		msg = &m
	}
	node, host, port := nodeID, c.s.advertHost, c.s.advertPort
	if code != 0 {
		node, host, port = -1, "", -1
	}
	if req.Version < 4 {
		resp.ErrorCode, resp.ErrorMessage = code, msg
		resp.NodeID, resp.Host, resp.Port = node, host, port
		return resp, nil
	}
	for _, key := range req.CoordinatorKeys {
		rc := kmsg.NewFindCoordinatorResponseCoordinator()
		rc.Key = key
		rc.ErrorCode, rc.ErrorMessage = code, msg
		rc.NodeID, rc.Host, rc.Port = node, host, port
		resp.Coordinators = append(resp.Coordinators, rc)
	}
	return resp, nil
}
