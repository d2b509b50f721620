package protocol

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lakegw/lakegw/produce"
	"github.com/lakegw/lakegw/txn"
)

// AddPartitionsToTxn (key 24)
//
// v1: nothing new. v2: PRODUCER_FENCED. v3: flexible. v4: batched
// transactions and VerifyOnly, a broker's request to the coordinator
// (KIP-890); a verify-only entry checks the partitions were added, adding
// nothing. A transactional producer adds each partition before its first
// records for it (txn.Coordinator.AddPartitions).
func init() { register(kmsg.AddPartitionsToTxn, 0, 4, handleAddPartitionsToTxn) }

func handleAddPartitionsToTxn(ctx context.Context, c *conn, req *kmsg.AddPartitionsToTxnRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.AddPartitionsToTxnResponse)
	fenced := fencedFrom(req.Version, 2)
	if req.Version < 4 {
		for _, rt := range addPartitions(ctx, c, req.TransactionalID, req.ProducerID, req.ProducerEpoch, false, topicsOfV3(req.Topics), fenced) {
			t := kmsg.NewAddPartitionsToTxnResponseTopic()
			t.Topic = rt.Topic
			for _, p := range rt.Partitions {
				t.Partitions = append(t.Partitions, kmsg.AddPartitionsToTxnResponseTopicPartition{Partition: p.Partition, ErrorCode: p.ErrorCode})
			}
			resp.Topics = append(resp.Topics, t)
		}
		return resp, nil
	}
	for _, tr := range req.Transactions {
		rt := kmsg.NewAddPartitionsToTxnResponseTransaction()
		rt.TransactionalID = tr.TransactionalID
		var tps []txnTopic
		for _, t := range tr.Topics {
			tps = append(tps, txnTopic{t.Topic, t.Partitions})
		}
		rt.Topics = addPartitions(ctx, c, tr.TransactionalID, tr.ProducerID, tr.ProducerEpoch, tr.VerifyOnly, tps, fenced)
		resp.Transactions = append(resp.Transactions, rt)
	}
	return resp, nil
}

type txnTopic struct {
	topic      string
	partitions []int32
}

func topicsOfV3(ts []kmsg.AddPartitionsToTxnRequestTopic) []txnTopic {
	out := make([]txnTopic, 0, len(ts))
	for _, t := range ts {
		out = append(out, txnTopic{t.Topic, t.Partitions})
	}
	return out
}

// addPartitions adds (or, verifyOnly, checks) the partitions of one
// transactional id and answers each.
func addPartitions(ctx context.Context, c *conn, id string, pid int64, epoch int16, verifyOnly bool, topics []txnTopic,
	fenced *kerr.Error) []kmsg.AddPartitionsToTxnResponseTransactionTopic {
	var parts []txn.TopicPartition
	for _, t := range topics {
		for _, p := range t.partitions {
			parts = append(parts, txn.TopicPartition{Topic: produce.CanonicalTopic(t.topic), Partition: p})
		}
	}
	codes := make([]int16, len(parts))
	switch {
	case c.s.txn == nil:
		for i := range codes {
			codes[i] = transactionsOff.Code
		}
	case verifyOnly:
		for i, err := range c.s.txn.Verify(id, pid, epoch, parts) {
			if err != nil {
				codes[i] = txnCode(err, fenced).Code
			}
		}
	default:
		errs, err := c.s.txn.AddPartitions(ctx, id, pid, epoch, parts)
		for i := range codes {
			e := err
			if e == nil {
				e = errs[i]
			}
			if e != nil {
				codes[i] = txnCode(e, fenced).Code
			}
		}
	}
	var out []kmsg.AddPartitionsToTxnResponseTransactionTopic
	i := 0
	for _, t := range topics {
		rt := kmsg.NewAddPartitionsToTxnResponseTransactionTopic()
		rt.Topic = t.topic
		for _, p := range t.partitions {
			rt.Partitions = append(rt.Partitions, kmsg.AddPartitionsToTxnResponseTransactionTopicPartition{Partition: p, ErrorCode: codes[i]})
			i++
		}
		out = append(out, rt)
	}
	return out
}
