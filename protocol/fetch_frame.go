package protocol

import (
	"encoding/binary"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lakegw/lakegw/fetch"
	"github.com/lakegw/lakegw/internal/bytepool"
)

// frameFor lays out the Fetch answer's frame (selfFramed).
func (a *fetchAnswer) frameFor(c *conn, req *request) frame { return c.fetchFrame(req, a) }

// release gives back the answer's batches (selfFramed).
func (a *fetchAnswer) release() { a.spans.Release() }

// fetchFrame frames a Fetch answer: written from the spans fetch read the
// batches into (memory, or disk cache files sent with sendfile), then
// released. An answer fetchFrame does not lay out is encoded by kmsg from
// the batches' bytes.
func (c *conn) fetchFrame(req *request, a *fetchAnswer) frame {
	a.SetVersion(req.msg.GetVersion())
	head, spans, ok := layoutFetch(bytepool.Get(4096), req.correlationID, a.FetchResponse, a.batches)
	if ok {
		return frame{b: head, pooled: true, spans: spans, holds: a.spans}
	}
	bytepool.Put(head)
	defer a.spans.Release()
	if err := a.materialize(); err != nil {
		c.log.Error().Err(err).Msg("closing connection: cannot read the record batches of a fetch response")
		return frame{}
	}
	size := 1024
	for _, t := range a.Topics {
		size += len(t.Topic) + 64*len(t.Partitions)
		for _, p := range t.Partitions {
			size += len(p.RecordBatches)
		}
	}
	return frame{b: frameResponse(req, a.FetchResponse, bytepool.Get(size)), pooled: true}
}

// materialize puts each partition's batches into its RecordBatches, reading
// file ranges into memory, for kmsg to encode; the bytes stay valid until
// the spans are released. A file that cannot be read is reported to the
// spans, which disable the disk cache.
func (a *fetchAnswer) materialize() error {
	for i := range a.batches {
		for j, bs := range a.batches[i] {
			if len(bs) == 0 {
				continue
			}
			b, err := bs.ReadAll()
			if err != nil {
				a.spans.FileFailed(err)
				return err
			}
			a.Topics[i].Partitions[j].RecordBatches = b
		}
	}
	return nil
}

// layoutFetch lays out a framed Fetch response as the protocol encodes it,
// but with each partition's record batches left where they are: head holds
// everything else, and spans interleaves slices of head with the batches,
// so that the connection writes them with writev (and sendfile for file
// ranges). Copying megabytes of batches into a frame was a fifth of a warm
// gateway's CPU under fan-out.
//
// It covers what the gateway sets in a response (versions 4-18: topics by
// name up to 12, by id from 13; no aborted transactions, no current-leader
// or snapshot-id tags, no node endpoints, no unknown tags); for anything
// else ok is false and the caller encodes with kmsg. What it declines is
// only ever set on partitions with an error (a fenced epoch from v16),
// which carry no batches.
// batches[i][j] are the batches of resp.Topics[i].Partitions[j]; a
// partition without them is written from its RecordBatches.
func layoutFetch(head []byte, correlationID int32, resp *kmsg.FetchResponse, batches [][]fetch.Batches) (_ []byte, spans []fetch.Span, ok bool) {
	v := resp.Version
	if v < 4 || v > 18 || resp.UnknownTags.Len() > 0 || len(resp.Brokers) > 0 {
		return head, nil, false
	}
	flexible := v >= 12
	// cuts are the offsets in head after which a partition's batches go.
	type cut struct {
		at      int
		batches fetch.Batches
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
		if v >= 13 {
			head = append(head, t.TopicID[:]...)
		} else {
			head = appendString(head, t.Topic, flexible)
		}
		head = appendArrayLen(head, len(t.Partitions), flexible)
		for j := range t.Partitions {
			p := &t.Partitions[j]
			if p.AbortedTransactions != nil || p.UnknownTags.Len() > 0 || p.CurrentLeader.LeaderID != -1 ||
				p.CurrentLeader.LeaderEpoch != -1 || p.SnapshotID.EndOffset != -1 || p.SnapshotID.Epoch != -1 ||
				p.DivergingEpoch.UnknownTags.Len() > 0 || p.RecordBatches == nil {
				return head, nil, false
			}
			bs := fetch.Batches{fetch.BytesSpan(p.RecordBatches)}
			if i < len(batches) && j < len(batches[i]) {
				bs = batches[i][j]
			}
			n := bs.Len()
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
				head = binary.AppendUvarint(head, uint64(n)+1)
			} else {
				head = binary.BigEndian.AppendUint32(head, uint32(n))
			}
			cuts = append(cuts, cut{at: len(head), batches: bs})
			size += n
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
		spans = append(spans, fetch.BytesSpan(head[from:c.at]))
		spans = append(spans, c.batches...)
		from = c.at
	}
	spans = append(spans, fetch.BytesSpan(head[from:]))
	return head, spans, true
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
