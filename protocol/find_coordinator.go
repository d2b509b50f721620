package protocol

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// FindCoordinator (key 10)
//
// v1: coordinator type (group or transaction), error message. v2: nothing
// new. v3: flexible. v4: batched keys (KIP-699). This gateway coordinates
// every group itself, and every transactional id when it takes writes.
func init() { register(kmsg.FindCoordinator, 0, 4, handleFindCoordinator) }

// coordinatorTransaction is FindCoordinator's key type of a transactional
// id (0 is a group).
const coordinatorTransaction = 1

func handleFindCoordinator(_ context.Context, c *conn, req *kmsg.FindCoordinatorRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.FindCoordinatorResponse)
	code := int16(0)
	var msg *string
	switch {
	case req.CoordinatorType == coordinatorTransaction && c.s.txn == nil:
		code = kerr.CoordinatorNotAvailable.Code
		m := "this lakegw takes no writes, so no transactions: its topics are read-only"
		msg = &m
	case req.CoordinatorType != 0 && req.CoordinatorType != coordinatorTransaction:
		code = kerr.InvalidRequest.Code
		m := "unknown coordinator type"
		msg = &m
	}
	if req.Version < 4 {
		resp.ErrorCode, resp.ErrorMessage = code, msg
		resp.NodeID, resp.Host, resp.Port = nodeID, c.s.advertHost, c.s.advertPort
		return resp, nil
	}
	for _, key := range req.CoordinatorKeys {
		rc := kmsg.NewFindCoordinatorResponseCoordinator()
		rc.Key = key
		rc.ErrorCode, rc.ErrorMessage = code, msg
		rc.NodeID, rc.Host, rc.Port = nodeID, c.s.advertHost, c.s.advertPort
		resp.Coordinators = append(resp.Coordinators, rc)
	}
	return resp, nil
}
