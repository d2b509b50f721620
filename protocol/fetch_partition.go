package protocol

import (
	"context"
	"errors"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lakegw/lakegw/fetch"
	"github.com/lakegw/lakegw/offsets"
	"github.com/lakegw/lakegw/topics"
)

// readFetch answers every requested partition of req, reading their
// batches into spans; batches[i][j] are those of resp.Topics[i].Partitions[j].
// urgent says the answer must go out at once (an error or a diverging
// epoch), whatever MinBytes asks.
func (s *Server) readFetch(ctx context.Context, req *kmsg.FetchRequest, spans *fetch.Spans) (
	resp *kmsg.FetchResponse, batches [][]fetch.Batches, total int, urgent bool) {
	resp = req.ResponseKind().(*kmsg.FetchResponse)
	// No fetch sessions: session id 0 tells clients to send full requests.
	resp.SessionID = 0
	maxBytes := responseLimit(req)
	for _, rt := range req.Topics {
		ot := kmsg.NewFetchResponseTopic()
		ot.Topic, ot.TopicID = rt.Topic, rt.TopicID
		var tb []fetch.Batches
		t, known := s.reg.Topic(rt.Topic)
		for _, rp := range rt.Partitions {
			op := kmsg.NewFetchResponseTopicPartition()
			op.Partition = rp.Partition
			op.HighWatermark, op.LastStableOffset, op.LogStartOffset = -1, -1, -1
			op.PreferredReadReplica = -1
			op.RecordBatches = []byte{} // never null (size -1): librdkafka rejects it as a parse failure
			var bs fetch.Batches
			switch {
			case !known && req.Version >= 13:
				// Named by an id no served topic has (nameTopicsByID).
				op.ErrorCode = kerr.UnknownTopicID.Code
				urgent = true
			case !known || rp.Partition < 0 || rp.Partition >= t.Index.Partitions():
				op.ErrorCode = kerr.UnknownTopicOrPartition.Code
				urgent = true
			case !s.leads(t.Name, rp.Partition):
				// Another gateway leads it; KIP-951 (v16+) names it, so
				// the consumer moves without waiting for Metadata.
				op.ErrorCode = kerr.NotLeaderForPartition.Code
				urgent = true
				if req.Version >= 16 {
					op.CurrentLeader.LeaderID, op.CurrentLeader.LeaderEpoch = s.leaderOf(s.view(), t.Name, rp.Partition).ID, t.Index.LeaderEpoch()
					resp.Brokers = s.nodeEndpoints()
				}
			default:
				bs = s.readPartition(ctx, t, req.Version, rp, maxBytes-total, total == 0, &op, spans)
				urgent = urgent || op.ErrorCode != 0 || op.DivergingEpoch.EndOffset >= 0
				if op.ErrorCode == kerr.FencedLeaderEpoch.Code && req.Version >= 16 {
					// KIP-951: a fenced consumer learns the current leader
					// (this gateway) and its epoch without asking Metadata.
					op.CurrentLeader.LeaderID, op.CurrentLeader.LeaderEpoch = s.cfg.NodeID, t.Index.LeaderEpoch()
					resp.Brokers = s.nodeEndpoints()
				}
			}
			total += bs.Len()
			ot.Partitions = append(ot.Partitions, op)
			tb = append(tb, bs)
		}
		resp.Topics = append(resp.Topics, ot)
		batches = append(batches, tb)
	}
	return resp, batches, total, urgent
}

// readPartition fills op and returns the partition's record batches, read
// into spans within budget bytes of the response (at least one batch when
// it is the response's first).
func (s *Server) readPartition(ctx context.Context, t *topics.Topic, version int16, rp kmsg.FetchRequestTopicPartition,
	budget int, first bool, op *kmsg.FetchResponseTopicPartition, spans *fetch.Spans) fetch.Batches {
	p := rp.Partition
	// One view of the index for the whole answer: its epoch checks, its
	// offsets and its batches (issue 12: a truncation between two lookups
	// mixed epochs in one answer).
	v := t.Index.View(p)
	hw := v.HighWatermark()
	op.HighWatermark, op.LastStableOffset, op.LogStartOffset = hw, hw, v.LogStart()
	if divergedOrFenced(version, rp, &v, op) {
		return nil
	}
	if rp.FetchOffset == hw {
		if err := t.IndexError(); err != nil {
			// The next snapshot cannot be read (a damaged table): say so
			// rather than let the consumer wait forever in silence.
			op.ErrorCode = kerr.KafkaStorageError.Code
		}
		return nil
	}
	limit := int(rp.PartitionMaxBytes)
	if limit <= 0 || limit > budget {
		limit = budget
	}
	if limit <= 0 && !first {
		return nil
	}
	compression := t.Config.Compression
	if compression == "zstd" && version < 10 {
		// zstd needs Fetch v10+: older clients cannot decode it.
		compression = "none"
	}
	bs, err := s.reader.ReadPartition(ctx, t, &v, p, rp.FetchOffset, max(limit, 1), compression, spans)
	// The read may have moved to a newer view (a segment gone before any
	// batch was in hand): answer with the offsets of the one its batches
	// are from.
	hw = v.HighWatermark()
	op.HighWatermark, op.LastStableOffset, op.LogStartOffset = hw, hw, v.LogStart()
	switch {
	case errors.Is(err, fetch.ErrOffsetOutOfRange):
		op.ErrorCode = kerr.OffsetOutOfRange.Code
	case err != nil && bs.Len() == 0:
		// fetch logged the failure. What was read before it, if
		// anything, is served without an error.
		op.ErrorCode = kerr.KafkaStorageError.Code
	}
	return bs
}

// divergedOrFenced checks the epochs the consumer sends against v and,
// when its offsets no longer mean what they did, says so in op: a leader
// epoch error, or a diverging epoch telling it where to truncate to.
func divergedOrFenced(version int16, rp kmsg.FetchRequestTopicPartition, v *offsets.View, op *kmsg.FetchResponseTopicPartition) bool {
	if version >= 9 && rp.CurrentLeaderEpoch >= 0 {
		// Only a rewrite fences: the leader epoch rises with every
		// snapshot (offsets/epochs.go), and a client that has not seen
		// the newest one still holds offsets that mean what they did.
		switch {
		case rp.CurrentLeaderEpoch < v.FenceEpoch():
			op.ErrorCode = kerr.FencedLeaderEpoch.Code
			return true
		case rp.CurrentLeaderEpoch > v.LeaderEpoch():
			op.ErrorCode = kerr.UnknownLeaderEpoch.Code
			return true
		}
	}
	if version >= 12 && rp.LastFetchedEpoch >= 0 {
		// The consumer says which epoch its last record came from. If that
		// epoch ended before its fetch offset (a history rewrite truncated
		// the log), tell it where to truncate to instead of serving records
		// that do not follow the ones it has.
		if epoch, end, ok := v.EpochEnd(rp.LastFetchedEpoch); ok && (epoch < rp.LastFetchedEpoch || end < rp.FetchOffset) {
			op.DivergingEpoch.Epoch, op.DivergingEpoch.EndOffset = epoch, end
			return true
		}
		// A compacted prefix rewrote the offsets below it under its own
		// epoch: a consumer that read them under an older one read other
		// records there and cannot continue in the middle of the prefix,
		// it must read the prefix from its start. One that read them under
		// the prefix's epoch or later (even if a rollback has since moved
		// the leader epoch on) read the prefix as it is.
		if seg, ok := v.Locate(rp.FetchOffset); ok && seg.Kind == offsets.KindCompactedPrefix &&
			rp.LastFetchedEpoch < seg.Epoch && rp.FetchOffset > seg.BaseOffset {
			op.DivergingEpoch.Epoch, op.DivergingEpoch.EndOffset = rp.LastFetchedEpoch, seg.BaseOffset
			return true
		}
	}
	return false
}

// nodeEndpoints is a Fetch v16+ answer's NodeEndpoints: the live
// gateways, among them the leader of every partition named.
func (s *Server) nodeEndpoints() []kmsg.FetchResponseBroker {
	var out []kmsg.FetchResponseBroker
	for _, n := range s.view().Nodes {
		b := kmsg.NewFetchResponseBroker()
		b.NodeID, b.Host, b.Port = n.ID, n.Host, n.Port
		out = append(out, b)
	}
	return out
}
