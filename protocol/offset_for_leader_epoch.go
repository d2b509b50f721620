package protocol

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetForLeaderEpoch (key 23)
//
// v1: leader epoch in the response. v2: current leader epoch, throttle.
// v3: replica id. v4: flexible. Consumers (Java client, Flink) use it to
// validate their position after a leader change or restart; a lakegw
// history rewrite bumps the epoch, and the end offset of the consumer's
// epoch tells it where its log diverged.
func init() { register(kmsg.OffsetForLeaderEpoch, 2, 4, handleOffsetForLeaderEpoch) }

func handleOffsetForLeaderEpoch(_ context.Context, c *conn, req *kmsg.OffsetForLeaderEpochRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.OffsetForLeaderEpochResponse)
	for _, rt := range req.Topics {
		ot := kmsg.NewOffsetForLeaderEpochResponseTopic()
		ot.Topic = rt.Topic
		t, known := c.s.reg.Topic(rt.Topic)
		for _, rp := range rt.Partitions {
			op := kmsg.NewOffsetForLeaderEpochResponseTopicPartition()
			op.Partition = rp.Partition
			op.LeaderEpoch, op.EndOffset = -1, -1
			if op.ErrorCode = c.s.partitionError(t, known, rp.Partition, rp.CurrentLeaderEpoch); op.ErrorCode == 0 {
				if epoch, end, ok := t.Index.EpochEnd(rp.Partition, rp.LeaderEpoch); ok {
					op.LeaderEpoch, op.EndOffset = epoch, end
				}
			}
			ot.Partitions = append(ot.Partitions, op)
		}
		resp.Topics = append(resp.Topics, ot)
	}
	return resp, nil
}
