package protocol

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lakegw/lakegw/txn"
)

// EndTxn (key 26)
//
// v1: nothing new. v2: PRODUCER_FENCED. v3: flexible. v4: nothing new
// (KIP-890 part 1). v5 (the server bumping the epoch at every end,
// transaction.version 2) is not served: clients use v4 with a broker that
// does not advertise that feature. A commit is answered once every table
// the transaction wrote holds its records and its group offsets are
// committed (txn.Coordinator.EndTxn).
func init() { register(kmsg.EndTxn, 0, 4, handleEndTxn) }

func handleEndTxn(ctx context.Context, c *conn, req *kmsg.EndTxnRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.EndTxnResponse)
	if c.s.txn == nil {
		resp.ErrorCode = transactionsOff.Code
		return resp, nil
	}
	if err := c.s.txn.EndTxn(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, req.Commit); err != nil {
		resp.ErrorCode = txnCode(err, fencedFrom(req.Version, 2)).Code
		if errors.Is(err, txn.ErrConcurrentTransactions) {
			// The producer retries; the coordinator's own retries warn.
			c.s.log.Debug().Err(err).Str("transactional_id", req.TransactionalID).Msg("a transaction's commit is decided but not complete; it completes on its producer's retry or by itself")
		}
	}
	return resp, nil
}
