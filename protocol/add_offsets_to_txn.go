package protocol

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lakegw/lakegw/protocol/groups"
)

// AddOffsetsToTxn (key 25)
//
// v1: nothing new. v2: PRODUCER_FENCED. v3: flexible. v4: nothing new
// (KIP-890). Adds a consumer group to the producer's transaction, whose
// TxnOffsetCommits then commit with it (consume-transform-produce).
func init() { register(kmsg.AddOffsetsToTxn, 0, 4, handleAddOffsetsToTxn) }

func handleAddOffsetsToTxn(ctx context.Context, c *conn, req *kmsg.AddOffsetsToTxnRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.AddOffsetsToTxnResponse)
	switch {
	case c.s.txn == nil:
		resp.ErrorCode = transactionsOff.Code
	case !groups.ValidGroupID(req.Group):
		resp.ErrorCode = kerr.InvalidGroupID.Code
	default:
		if err := c.s.txn.AddOffsets(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Group); err != nil {
			resp.ErrorCode = txnCode(err, fencedFrom(req.Version, 2)).Code
		}
	}
	return resp, nil
}
