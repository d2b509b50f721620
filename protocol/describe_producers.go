package protocol

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lakegw/lakegw/produce"
)

// DescribeProducers (key 61)
//
// v0 only. The transactional producers that wrote each partition under
// their current epoch; one whose open transaction holds records for the
// partition has CurrentTxnStartOffset set, to the partition's high
// watermark: its records have no offsets until it commits, and then begin
// there at the earliest. Flink's KafkaSink with the POOLING naming
// strategy finds the transactions it must abort through it. Idempotent
// producers are not listed.
func init() { register(kmsg.DescribeProducers, 0, 0, handleDescribeProducers) }

func handleDescribeProducers(_ context.Context, c *conn, req *kmsg.DescribeProducersRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeProducersResponse)
	for _, rt := range req.Topics {
		st := kmsg.NewDescribeProducersResponseTopic()
		st.Topic = rt.Topic
		t, known := c.s.reg.Topic(rt.Topic)
		for _, p := range rt.Partitions {
			sp := kmsg.NewDescribeProducersResponseTopicPartition()
			sp.Partition = p
			if sp.ErrorCode = c.s.partitionError(t, known, p, -1); sp.ErrorCode == 0 && c.s.txn != nil {
				for _, pr := range c.s.txn.Producers(produce.CanonicalTopic(rt.Topic), p) {
					ap := kmsg.NewDescribeProducersResponseTopicPartitionActiveProducer()
					ap.ProducerID, ap.ProducerEpoch, ap.LastSequence, ap.LastTimestamp = pr.ProducerID, int32(pr.Epoch), pr.LastSequence, pr.LastMs
					ap.CoordinatorEpoch, ap.CurrentTxnStartOffset = 0, -1
					if pr.Open {
						ap.CurrentTxnStartOffset = t.Index.HighWatermark(p)
					}
					sp.ActiveProducers = append(sp.ActiveProducers, ap)
				}
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp, nil
}
