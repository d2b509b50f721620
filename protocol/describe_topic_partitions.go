package protocol

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lakegw/lakegw/produce"
)

// DescribeTopicPartitions (key 75)
//
// v0 (KIP-966): the partitions of topics by name, paged: Kafka 4's
// `kafka-topics --describe` and the admin client's describeTopics use it,
// and Flink's KafkaSource falls back from it to Metadata. The partitions
// are Metadata's (topicMetadata), answered as Kafka's
// DescribeTopicPartitionsRequestHandler and KRaftMetadataCache answer them:
//   - no topics: every topic; else those named (each once). Either way only
//     names at or after the cursor's topic, in name order;
//   - a cursor topic missing from the names listed, or a negative cursor
//     partition, is INVALID_REQUEST for every topic named;
//   - at most ResponsePartitionLimit partitions in all (within 1 and
//     Kafka's max.request.partition.size.limit, 2000), the cursor's topic
//     from its partition: a topic cut short, or the next topic once the
//     limit is spent, is the NextCursor;
//   - a named topic that is not served is UNKNOWN_TOPIC_OR_PARTITION
//     (INVALID_TOPIC_EXCEPTION for an illegal name), with no topic id.
//
// No replica is ever offline or outside the ISR: eligible leader replicas
// and offline replicas are empty.
func init() { register(kmsg.DescribeTopicPartitions, 0, 0, handleDescribeTopicPartitions) }

// maxRequestPartitionSizeLimit is Kafka's max.request.partition.size.limit
// default: the most partitions one answer holds.
const maxRequestPartitionSizeLimit = 2000

func handleDescribeTopicPartitions(_ context.Context, c *conn, req *kmsg.DescribeTopicPartitionsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.DescribeTopicPartitionsResponse)
	cursorTopic := ""
	if req.Cursor != nil {
		cursorTopic = req.Cursor.Topic
	}
	all := len(req.Topics) == 0
	var names []string
	if all {
		for _, t := range c.s.reg.Topics() {
			if t.Name >= cursorTopic {
				names = append(names, t.Name)
			}
		}
	} else {
		for _, rt := range req.Topics {
			if rt.Topic >= cursorTopic {
				names = append(names, rt.Topic)
			}
		}
		slices.Sort(names)
		names = slices.Compact(names)
	}
	if req.Cursor != nil && (req.Cursor.Partition < 0 || !all && !slices.Contains(names, req.Cursor.Topic)) {
		for _, rt := range req.Topics {
			dt := kmsg.NewDescribeTopicPartitionsResponseTopic()
			dt.ErrorCode = kerr.InvalidRequest.Code
			dt.Topic = kmsg.StringPtr(rt.Topic)
			dt.Partitions = []kmsg.DescribeTopicPartitionsResponseTopicPartition{}
			resp.Topics = append(resp.Topics, dt)
		}
		return resp, nil
	}
	view := c.s.view()
	remaining := int64(max(min(req.ResponsePartitionLimit, maxRequestPartitionSizeLimit), 1))
	for _, name := range names {
		if remaining == 0 {
			// The cursor points at the start of the next topic, served
			// or not.
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name}
			break
		}
		mt := c.topicMetadata(view, name)
		if mt.ErrorCode != 0 {
			if !all {
				dt := kmsg.NewDescribeTopicPartitionsResponseTopic()
				dt.ErrorCode, dt.Topic = mt.ErrorCode, kmsg.StringPtr(name)
				if produce.CheckTopicName(name) != nil {
					dt.ErrorCode = kerr.InvalidTopicException.Code
				}
				resp.Topics = append(resp.Topics, dt)
			}
			continue
		}
		start := int64(0)
		if name == cursorTopic {
			start = int64(req.Cursor.Partition)
		}
		n := int64(len(mt.Partitions))
		upper := min(n, start+remaining)
		dt := kmsg.NewDescribeTopicPartitionsResponseTopic()
		dt.Topic, dt.TopicID = kmsg.StringPtr(name), mt.TopicID
		dt.Partitions = []kmsg.DescribeTopicPartitionsResponseTopicPartition{}
		for _, mp := range mt.Partitions[min(start, upper):upper] {
			dp := kmsg.NewDescribeTopicPartitionsResponseTopicPartition()
			dp.ErrorCode, dp.Partition, dp.LeaderID, dp.LeaderEpoch = mp.ErrorCode, mp.Partition, mp.Leader, mp.LeaderEpoch
			dp.Replicas, dp.ISR = mp.Replicas, mp.ISR
			dp.EligibleLeaderReplicas, dp.LastKnownELR, dp.OfflineReplicas = []int32{}, []int32{}, []int32{}
			dt.Partitions = append(dt.Partitions, dp)
		}
		resp.Topics = append(resp.Topics, dt)
		if upper < n {
			resp.NextCursor = &kmsg.DescribeTopicPartitionsResponseNextCursor{Topic: name, Partition: int32(upper)}
			break
		}
		remaining -= int64(len(dt.Partitions))
	}
	return resp, nil
}
