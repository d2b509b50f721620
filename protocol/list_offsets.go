package protocol

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lakegw/lakegw/topics"
)

// ListOffsets (key 2)
//
// v1: one offset per partition (v0's old-style offsets are not served). v2:
// isolation level (every committed record is stable: LSO = HWM). v4:
// current leader epoch in, leader epoch out. v6: flexible. v7: timestamp
// -3 = max timestamp. v8: -4 = earliest local (= earliest here).
//
// By timestamp: the first offset of the first snapshot committed at or
// after it (DESIGN.md).
func init() { register(kmsg.ListOffsets, 1, 8, handleListOffsets) }

const (
	tsLatest        = -1
	tsEarliest      = -2
	tsMax           = -3
	tsEarliestLocal = -4
)

func handleListOffsets(_ context.Context, c *conn, req *kmsg.ListOffsetsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	for _, rt := range req.Topics {
		ot := kmsg.NewListOffsetsResponseTopic()
		ot.Topic = rt.Topic
		t, known := c.s.reg.Topic(rt.Topic)
		for _, rp := range rt.Partitions {
			op := kmsg.NewListOffsetsResponseTopicPartition()
			op.Partition = rp.Partition
			op.Timestamp, op.Offset, op.LeaderEpoch = -1, -1, -1
			if op.ErrorCode = partitionError(t, known, rp.Partition, rp.CurrentLeaderEpoch); op.ErrorCode == 0 {
				listOffset(t, rp.Partition, rp.Timestamp, &op)
			}
			ot.Partitions = append(ot.Partitions, op)
		}
		resp.Topics = append(resp.Topics, ot)
	}
	return resp, nil
}

func listOffset(t *topics.Topic, p int32, ts int64, op *kmsg.ListOffsetsResponseTopicPartition) {
	idx := t.Index
	op.LeaderEpoch = idx.LeaderEpoch()
	switch ts {
	case tsLatest:
		op.Offset = idx.HighWatermark(p)
	case tsEarliest, tsEarliestLocal:
		op.Offset = idx.LogStart(p)
	case tsMax:
		hw := idx.HighWatermark(p)
		if hw > idx.LogStart(p) {
			if seg, ok := idx.Locate(p, hw-1); ok {
				op.Offset, op.Timestamp = hw-1, seg.TimestampMs
			}
		}
	default:
		if ts < 0 {
			op.ErrorCode = kerr.InvalidRequest.Code
			return
		}
		if off, at, ok := idx.OffsetForTime(p, ts); ok {
			op.Offset, op.Timestamp = off, at
		}
	}
}

// partitionError is the error code for a request on partition p of a topic
// (known says whether the topic exists) made with the client's current
// leader epoch; 0 when the partition may be served.
func partitionError(t *topics.Topic, known bool, p, currentEpoch int32) int16 {
	if !known || p < 0 || p >= t.Index.Partitions() {
		return kerr.UnknownTopicOrPartition.Code
	}
	return checkLeaderEpoch(t, currentEpoch)
}

// checkLeaderEpoch validates a client's current leader epoch (-1 = none).
func checkLeaderEpoch(t *topics.Topic, current int32) int16 {
	if current < 0 {
		return 0
	}
	// Only a rewrite fences (offsets.View.FenceEpoch): the leader epoch
	// rises with every snapshot.
	switch {
	case current < t.Index.FenceEpoch():
		return kerr.FencedLeaderEpoch.Code
	case current > t.Index.LeaderEpoch():
		return kerr.UnknownLeaderEpoch.Code
	}
	return 0
}
