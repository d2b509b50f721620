package protocol

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lakegw/lakegw/produce"
)

// InitProducerId (key 22)
//
// v1: nothing new. v2: flexible. v3: producer id and epoch in the
// request, to bump the epoch of a producer that lost its sequence state
// (KIP-360). v4: PRODUCER_FENCED. v5: nothing new (KIP-890). An idempotent
// producer gets a fresh id (produce.Service.InitProducerID); a
// transactional one is refused until transactions exist.
func init() { register(kmsg.InitProducerID, 0, 5, handleInitProducerID) }

func handleInitProducerID(ctx context.Context, c *conn, req *kmsg.InitProducerIDRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.InitProducerIDResponse)
	resp.ProducerID, resp.ProducerEpoch = -1, -1
	switch {
	case c.s.produce == nil:
		resp.ErrorCode = kerr.ClusterAuthorizationFailed.Code
	case req.TransactionalID != nil && c.s.txn == nil:
		resp.ErrorCode = transactionsOff.Code
	case req.TransactionalID != nil:
		pid, epoch, err := c.s.txn.InitProducerID(ctx, *req.TransactionalID, req.TransactionTimeoutMillis, req.ProducerID, req.ProducerEpoch)
		if err != nil {
			resp.ErrorCode = txnCode(err, fencedFrom(req.Version, 4)).Code
			break
		}
		resp.ProducerID, resp.ProducerEpoch = pid, epoch
	case req.ProducerID >= 0 && req.ProducerEpoch >= 0:
		// KIP-360: the producer keeps its id under the next epoch, and
		// its sequences restart at 0 there; one a newer epoch fenced is
		// told so.
		pid, epoch, err := c.s.produce.BumpProducerEpoch(req.ProducerID, req.ProducerEpoch)
		if errors.Is(err, produce.ErrInvalidProducerEpoch) {
			resp.ErrorCode = kerr.InvalidProducerEpoch.Code
			if req.Version >= 4 {
				resp.ErrorCode = kerr.ProducerFenced.Code
			}
			break
		}
		if err != nil {
			return nil, err
		}
		resp.ProducerID, resp.ProducerEpoch = pid, epoch
	default:
		pid, epoch, err := c.s.produce.InitProducerID()
		if err != nil {
			return nil, err
		}
		resp.ProducerID, resp.ProducerEpoch = pid, epoch
	}
	return resp, nil
}
