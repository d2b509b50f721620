package protocol

import (
	"cmp"
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lakegw/lakegw/txn"
)

// DescribeTransactions (key 65)
//
// v0 only. The state, producer, timeout and partitions of each
// transactional id (kafka-transactions describe, Flink's transaction
// naming that pools ids).
func init() { register(kmsg.DescribeTransactions, 0, 0, handleDescribeTransactions) }

func handleDescribeTransactions(_ context.Context, c *conn, req *kmsg.DescribeTransactionsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeTransactionsResponse)
	var recs []txn.Record
	found := make([]bool, len(req.TransactionalIDs))
	if c.s.txn != nil {
		recs, found = c.s.txn.Describe(req.TransactionalIDs)
	}
	for i, id := range req.TransactionalIDs {
		st := kmsg.NewDescribeTransactionsResponseTransactionState()
		st.TransactionalID = id
		st.ProducerID, st.ProducerEpoch, st.StartTimestamp = -1, -1, -1
		if !found[i] {
			st.ErrorCode = kerr.TransactionalIDNotFound.Code
			resp.TransactionStates = append(resp.TransactionStates, st)
			continue
		}
		r := recs[i]
		st.State, st.TimeoutMillis, st.StartTimestamp = string(r.State), r.TimeoutMs, r.StartMs
		st.ProducerID, st.ProducerEpoch = r.ProducerID, r.Epoch
		parts := slices.Clone(r.Partitions)
		slices.SortFunc(parts, func(a, b txn.TopicPartition) int {
			return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
		})
		for _, p := range parts {
			n := len(st.Topics)
			if n == 0 || st.Topics[n-1].Topic != p.Topic {
				t := kmsg.NewDescribeTransactionsResponseTransactionStateTopic()
				t.Topic = p.Topic
				st.Topics = append(st.Topics, t)
				n++
			}
			st.Topics[n-1].Partitions = append(st.Topics[n-1].Partitions, p.Partition)
		}
		resp.TransactionStates = append(resp.TransactionStates, st)
	}
	return resp, nil
}
