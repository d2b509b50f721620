package protocol

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lakegw/lakegw/topics"
)

// ListOffsets (key 2)
//
// v1: one offset per partition (v0's old-style offsets are not served: v0
// is answered UNSUPPORTED_VERSION, unsupported_version.go). v2:
// isolation level (every committed record is stable: LSO = HWM). v4:
// current leader epoch in, leader epoch out. v5: OFFSET_NOT_AVAILABLE
// (never here: the high watermark never lags an epoch's start). v6:
// flexible. v7: timestamp -3 = max timestamp (KIP-734). v8: -4 = earliest
// local (KIP-405). v9: -5 = latest tiered (KIP-1005). v10: TimeoutMs, how
// long a broker may wait on remote storage before REQUEST_TIMED_OUT
// (KIP-1075): ignored, every answer comes from the offset index in memory
// at once. v11: -6 = earliest pending upload (KIP-1023).
//
// By timestamp: the first offset of the first snapshot committed at or
// after it (DESIGN.md).
//
// The tiered-storage specs (-4, -5, -6) are answered as a Kafka 4 broker
// answers them for a topic without remote storage (remote.storage.enable
// false), which is what a lakegw topic is to a client: every offset from
// the log start is fetched alike, none is "remote" or "waiting to be
// uploaded" (the lake is the only copy, and it is the log). Kafka's
// UnifiedLog.fetchOffsetByTimestamp (storage/.../log/UnifiedLog.java) then
// gives -4 exactly as -2 (the log start), and -5 and -6 offset -1,
// timestamp -1, leader epoch -1 without an error
// (fetchEarliestPendingUploadOffset without remoteLogEnabled). Answering
// -4 with the high watermark (as if the whole log were tiered) would send
// a consumer that resets to earliest-local past every record.
func init() { register(kmsg.ListOffsets, 1, 11, handleListOffsets) }

const (
	tsLatest                = -1
	tsEarliest              = -2
	tsMax                   = -3
	tsEarliestLocal         = -4
	tsLatestTiered          = -5
	tsEarliestPendingUpload = -6
)

// timestampMinVersion is the first request version that may carry each
// special timestamp: Kafka's ReplicaManager.timestampMinSupportedVersion.
// Any other negative timestamp, or one sent at a lower version, is
// answered UNSUPPORTED_VERSION for its partition, as Kafka does.
var timestampMinVersion = map[int64]int16{
	tsLatest: 1, tsEarliest: 1, tsMax: 7, tsEarliestLocal: 8, tsLatestTiered: 9, tsEarliestPendingUpload: 11,
}

func handleListOffsets(_ context.Context, c *conn, req *kmsg.ListOffsetsRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
	dups := duplicateListOffsetsPartitions(req)
	for _, rt := range req.Topics {
		ot := kmsg.NewListOffsetsResponseTopic()
		ot.Topic = rt.Topic
		t, known := c.s.reg.Topic(rt.Topic)
		for _, rp := range rt.Partitions {
			op := kmsg.NewListOffsetsResponseTopicPartition()
			op.Partition = rp.Partition
			switch answered, dup := dups[topicPartition{rt.Topic, rp.Partition}]; {
			case dup && answered:
				continue
			case dup:
				// Kafka answers a partition named twice once, with
				// INVALID_REQUEST (ReplicaManager.fetchOffset).
				dups[topicPartition{rt.Topic, rp.Partition}] = true
				op.ErrorCode = kerr.InvalidRequest.Code
			case rp.Timestamp < 0 && !timestampSupported(rp.Timestamp, req.Version):
				op.ErrorCode = kerr.UnsupportedVersion.Code
			default:
				if op.ErrorCode = c.s.partitionError(t, known, rp.Partition, rp.CurrentLeaderEpoch); op.ErrorCode == 0 {
					listOffset(t, rp.Partition, rp.Timestamp, &op)
				}
			}
			ot.Partitions = append(ot.Partitions, op)
		}
		resp.Topics = append(resp.Topics, ot)
	}
	return resp, nil
}

type topicPartition struct {
	topic     string
	partition int32
}

// duplicateListOffsetsPartitions holds the topic-partitions named more
// than once in req, each false until answered (nil when none is).
func duplicateListOffsetsPartitions(req *kmsg.ListOffsetsRequest) map[topicPartition]bool {
	seen := map[topicPartition]bool{}
	var dups map[topicPartition]bool
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			k := topicPartition{rt.Topic, rp.Partition}
			if seen[k] {
				if dups == nil {
					dups = map[topicPartition]bool{}
				}
				dups[k] = false
			}
			seen[k] = true
		}
	}
	return dups
}

func timestampSupported(ts int64, version int16) bool {
	min, ok := timestampMinVersion[ts]
	return ok && version >= min
}

// listOffset answers one partition. A partition answer starts as Kafka's
// "nothing found": offset, timestamp and leader epoch -1.
func listOffset(t *topics.Topic, p int32, ts int64, op *kmsg.ListOffsetsResponseTopicPartition) {
	idx := t.Index
	switch ts {
	case tsLatest:
		op.Offset, op.LeaderEpoch = idx.HighWatermark(p), idx.LeaderEpoch()
	case tsEarliest, tsEarliestLocal:
		op.Offset, op.LeaderEpoch = idx.LogStart(p), idx.LeaderEpoch()
	case tsLatestTiered, tsEarliestPendingUpload:
		// Nothing is tiered, nothing waits for an upload: Kafka's answer
		// for a topic without remote storage (see the notes above).
	case tsMax:
		hw := idx.HighWatermark(p)
		if hw > idx.LogStart(p) {
			if seg, ok := idx.Locate(p, hw-1); ok {
				op.Offset, op.Timestamp, op.LeaderEpoch = hw-1, seg.TimestampMs, idx.LeaderEpoch()
			}
		}
	default:
		if off, at, ok := idx.OffsetForTime(p, ts); ok {
			op.Offset, op.Timestamp, op.LeaderEpoch = off, at, idx.LeaderEpoch()
		}
	}
}

// partitionError is the error code for a request on partition p of a topic
// (known says whether the topic exists) made with the client's current
// leader epoch; 0 when the partition may be served.
func (s *Server) partitionError(t *topics.Topic, known bool, p, currentEpoch int32) int16 {
	switch {
	case !known || p < 0 || p >= t.Index.Partitions():
		return kerr.UnknownTopicOrPartition.Code
	case !s.leads(t.Name, p):
		// Another gateway leads it: the client finds which in Metadata.
		return kerr.NotLeaderForPartition.Code
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
