package protocol

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Produce (key 0)
//
// Advertised from v0: librdkafka turns compression off when a broker does
// not list Produce v0-2. Topics are read-only until lakegw's own
// primary-key tables take writes, so every partition is refused with a
// non-retriable error and, from v8, a message that says why.
func init() { register(kmsg.Produce, 0, 9, handleProduce) }

const readOnlyMessage = "lakegw topics are read-only: they serve the changes of Iceberg tables; write to the table instead"

func handleProduce(_ context.Context, c *conn, req *kmsg.ProduceRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	if req.Acks == 0 {
		// acks=0 producers read no response, and Kafka sends none: the
		// refusal can only be logged.
		c.log.Warn().Msg("refusing acks=0 produce: topics are read-only")
		return nil, nil
	}
	msg := readOnlyMessage
	for _, t := range req.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode = kerr.PolicyViolation.Code
			rp.ErrorMessage = &msg
			rp.BaseOffset = -1
			rp.LogAppendTime = -1
			rp.LogStartOffset = -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil
}
