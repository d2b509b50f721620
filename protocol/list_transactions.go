package protocol

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lakegw/lakegw/txn"
)

// ListTransactions (key 66)
//
// v0: state and producer id filters. v1: transactions open at least a
// duration (KIP-994). v2 (a transactional id pattern, KIP-1152) is not
// served. An unknown state in the filter is listed back, as Kafka does.
func init() { register(kmsg.ListTransactions, 0, 1, handleListTransactions) }

func handleListTransactions(_ context.Context, c *conn, req *kmsg.ListTransactionsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	f := txn.Filter{ProducerIDs: req.ProducerIDFilters}
	if req.Version >= 1 {
		f.MinDurationMs = req.DurationFilterMillis
	}
	for _, s := range req.StateFilters {
		if !slices.Contains(txn.States, txn.State(s)) {
			resp.UnknownStateFilters = append(resp.UnknownStateFilters, s)
			continue
		}
		f.States = append(f.States, txn.State(s))
	}
	if c.s.txn == nil || (len(req.StateFilters) > 0 && len(f.States) == 0) {
		return resp, nil
	}
	for _, r := range c.s.txn.List(f) {
		st := kmsg.NewListTransactionsResponseTransactionState()
		st.TransactionalID, st.ProducerID, st.TransactionState = r.ID, r.ProducerID, string(r.State)
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp, nil
}
