package protocol

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lakegw/lakegw/txn"
)

// TxnOffsetCommit (key 28)
//
// v1: nothing new. v2: leader epoch per partition. v3: the committing
// consumer's generation, member id and instance id (KIP-447), checked as an
// OffsetCommit's. v4: nothing new (KIP-890). The offsets are staged in the
// producer's transaction and committed with it; until then an OffsetFetch
// requiring stable offsets is told UNSTABLE_OFFSET_COMMIT for them.
func init() { register(kmsg.TxnOffsetCommit, 0, 4, handleTxnOffsetCommit) }

func handleTxnOffsetCommit(ctx context.Context, c *conn, req *kmsg.TxnOffsetCommitRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.TxnOffsetCommitResponse)
	for _, t := range req.Topics {
		rt := kmsg.NewTxnOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewTxnOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	setAll := func(code int16) (kmsg.Response, error) {
		for i := range resp.Topics {
			for j := range resp.Topics[i].Partitions {
				if resp.Topics[i].Partitions[j].ErrorCode == 0 {
					resp.Topics[i].Partitions[j].ErrorCode = code
				}
			}
		}
		return resp, nil
	}
	if c.s.txn == nil {
		return setAll(transactionsOff.Code)
	}
	if code := c.s.groups.ValidateTxnOffsetCommit(req); code != 0 {
		return setAll(code)
	}
	var offs []txn.StagedOffset
	for i, t := range req.Topics {
		for j, p := range t.Partitions {
			md := ""
			if p.Metadata != nil {
				md = *p.Metadata
			}
			if code := c.s.groups.CheckOffset(t.Topic, p.Partition, md); code != 0 {
				resp.Topics[i].Partitions[j].ErrorCode = code
				continue
			}
			epoch := p.LeaderEpoch
			if req.Version < 2 {
				epoch = -1
			}
			offs = append(offs, txn.StagedOffset{Group: req.Group, Topic: t.Topic, Partition: p.Partition, Offset: p.Offset,
				LeaderEpoch: epoch, Metadata: md})
		}
	}
	if len(offs) == 0 {
		return resp, nil
	}
	if err := c.s.txn.StageOffsets(ctx, req.TransactionalID, req.ProducerID, req.ProducerEpoch, offs); err != nil {
		// The group coordinator's codes: INVALID_PRODUCER_EPOCH for a
		// fenced producer here.
		return setAll(txnCode(err, kerr.InvalidProducerEpoch).Code)
	}
	return resp, nil
}
