package protocol

import (
	"encoding/binary"
	"net"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// fetchFrame lays out a framed Fetch response as the protocol encodes it,
// but with each partition's record batches left where they are: head holds
// everything else, and bufs interleaves slices of head with the batches, so
// that the connection writes them with one writev. Copying megabytes of
// batches into a frame was a fifth of a warm gateway's CPU under fan-out.
//
// It covers what the gateway sets in a response (versions 4-12, no aborted
// transactions, no current-leader or snapshot-id tags, no unknown tags);
// for anything else ok is false and the caller encodes with kmsg.
func fetchFrame(head []byte, correlationID int32, resp *kmsg.FetchResponse) (_ []byte, bufs net.Buffers, ok bool) {
	v := resp.Version
	if v < 4 || v > 12 || resp.UnknownTags.Len() > 0 || len(resp.Brokers) > 0 {
		return head, nil, false
	}
	flexible := v >= 12
	// cuts are the offsets in head after which a partition's batches go.
	type cut struct {
		at      int
		batches []byte
	}
	var cuts []cut
	size := 0
	head = append(head[:0], 0, 0, 0, 0)
	head = binary.BigEndian.AppendUint32(head, uint32(correlationID))
	if flexible {
		head = append(head, 0) // response header tags
	}
	head = binary.BigEndian.AppendUint32(head, uint32(resp.ThrottleMillis))
	if v >= 7 {
		head = binary.BigEndian.AppendUint16(head, uint16(resp.ErrorCode))
		head = binary.BigEndian.AppendUint32(head, uint32(resp.SessionID))
	}
	head = appendArrayLen(head, len(resp.Topics), flexible)
	for i := range resp.Topics {
		t := &resp.Topics[i]
		if t.UnknownTags.Len() > 0 {
			return head, nil, false
		}
		head = appendString(head, t.Topic, flexible)
		head = appendArrayLen(head, len(t.Partitions), flexible)
		for j := range t.Partitions {
			p := &t.Partitions[j]
			if p.AbortedTransactions != nil || p.UnknownTags.Len() > 0 || p.CurrentLeader.LeaderID != -1 ||
				p.CurrentLeader.LeaderEpoch != -1 || p.SnapshotID.EndOffset != -1 || p.SnapshotID.Epoch != -1 ||
				p.DivergingEpoch.UnknownTags.Len() > 0 || p.RecordBatches == nil {
				return head, nil, false
			}
			head = binary.BigEndian.AppendUint32(head, uint32(p.Partition))
			head = binary.BigEndian.AppendUint16(head, uint16(p.ErrorCode))
			head = binary.BigEndian.AppendUint64(head, uint64(p.HighWatermark))
			head = binary.BigEndian.AppendUint64(head, uint64(p.LastStableOffset))
			if v >= 5 {
				head = binary.BigEndian.AppendUint64(head, uint64(p.LogStartOffset))
			}
			// No aborted transactions: a null array.
			if flexible {
				head = binary.AppendUvarint(head, 0)
			} else {
				head = binary.BigEndian.AppendUint32(head, ^uint32(0))
			}
			if v >= 11 {
				head = binary.BigEndian.AppendUint32(head, uint32(p.PreferredReadReplica))
			}
			if flexible {
				head = binary.AppendUvarint(head, uint64(len(p.RecordBatches))+1)
			} else {
				head = binary.BigEndian.AppendUint32(head, uint32(len(p.RecordBatches)))
			}
			cuts = append(cuts, cut{at: len(head), batches: p.RecordBatches})
			size += len(p.RecordBatches)
			if flexible {
				if p.DivergingEpoch.Epoch != -1 || p.DivergingEpoch.EndOffset != -1 {
					// One tag (0): its size, epoch, end offset, no tags.
					head = append(head, 1, 0, 13)
					head = binary.BigEndian.AppendUint32(head, uint32(p.DivergingEpoch.Epoch))
					head = binary.BigEndian.AppendUint64(head, uint64(p.DivergingEpoch.EndOffset))
					head = append(head, 0)
				} else {
					head = append(head, 0)
				}
			}
		}
		if flexible {
			head = append(head, 0) // topic tags
		}
	}
	if flexible {
		head = append(head, 0) // response tags
	}
	binary.BigEndian.PutUint32(head, uint32(len(head)+size-4))
	from := 0
	for _, c := range cuts {
		bufs = append(bufs, head[from:c.at], c.batches)
		from = c.at
	}
	bufs = append(bufs, head[from:])
	return head, bufs, true
}

func appendArrayLen(b []byte, n int, flexible bool) []byte {
	if flexible {
		return binary.AppendUvarint(b, uint64(n)+1)
	}
	return binary.BigEndian.AppendUint32(b, uint32(n))
}

func appendString(b []byte, s string, flexible bool) []byte {
	if flexible {
		b = binary.AppendUvarint(b, uint64(len(s))+1)
	} else {
		b = binary.BigEndian.AppendUint16(b, uint16(len(s)))
	}
	return append(b, s...)
}
