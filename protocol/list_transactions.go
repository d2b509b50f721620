package protocol

import (
	"context"
	"regexp"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lakegw/lakegw/txn"
)

// ListTransactions (key 66)
//
// v0: state and producer id filters. v1: transactions open at least a
// duration (KIP-994). v2: a transactional id pattern (KIP-1152; RE2, the
// whole id must match, as Kafka's RE2/J matches(); a bad one is
// INVALID_REGULAR_EXPRESSION). An unknown state in the filter is listed
// back, as Kafka does.
func init() { register(kmsg.ListTransactions, 0, 2, handleListTransactions) }

func handleListTransactions(_ context.Context, c *conn, req *kmsg.ListTransactionsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ListTransactionsResponse)
	var pattern *regexp.Regexp
	if req.Version >= 2 && req.TransactionalIDPattern != nil && *req.TransactionalIDPattern != "" {
		re, err := regexp.Compile("^(?:" + *req.TransactionalIDPattern + ")$")
		if err != nil {
			resp.ErrorCode = kerr.InvalidRegularExpression.Code
			return resp, nil
		}
		pattern = re
	}
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
		if pattern != nil && !pattern.MatchString(r.ID) {
			continue
		}
		st := kmsg.NewListTransactionsResponseTransactionState()
		st.TransactionalID, st.ProducerID, st.TransactionState = r.ID, r.ProducerID, string(r.State)
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp, nil
}
