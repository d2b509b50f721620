package fetch

import (
	"context"
	"errors"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lakegw/lakegw/internal/bytepool"
	"github.com/lakegw/lakegw/offsets"
	"github.com/lakegw/lakegw/topics"
)

// maxWaitCap bounds a client's MaxWait so a hostile value cannot pin a
// handler goroutine for days.
const maxWaitCap = 5 * time.Minute

// Serve answers a Fetch request: it reads what is there and, while fewer
// than MinBytes are available, waits up to MaxWait for new snapshots of the
// requested topics (woken by the topics' change channels, no polling).
//
// The response's record batches live in a pooled buffer and in files of
// the batch disk cache: call its Release once it is written and no longer
// used.
func (r *Reader) Serve(ctx context.Context, reg *topics.Registry, req *kmsg.FetchRequest) *Response {
	out := &Response{arena: bytepool.Get(arenaHint(req)), disk: r.cache.disk}
	var sink batchSink
	defer func() {
		// An encoder bug panics (the connection recovers and closes): the
		// disk cache files this read referred to must still go back.
		if p := recover(); p != nil {
			releaseSegments(sink.segs)
			panic(p)
		}
	}()
	wait := min(time.Duration(max(req.MaxWaitMillis, 0))*time.Millisecond, maxWaitCap)
	deadline := time.Now().Add(wait)
	for {
		// Collect the wake-up channels before reading, so a snapshot that
		// lands between the read and the wait is not missed.
		var wake []<-chan struct{}
		seen := map[*topics.Topic]bool{}
		for _, rt := range req.Topics {
			if t, ok := reg.Topic(rt.Topic); ok && !seen[t] {
				seen[t] = true
				wake = append(wake, t.Changed())
			}
		}
		// Each pass reads afresh into the same buffer: a response not sent
		// is dropped whole, with the disk cache files it referred to.
		releaseSegments(out.segs)
		out.segs = nil
		sink = batchSink{arena: out.arena[:0], files: true}
		var total int
		var urgent bool
		out.FetchResponse, out.Batches, total, urgent = r.readAll(ctx, reg, req, &sink)
		out.arena, out.segs = sink.arena, sink.segs
		remaining := time.Until(deadline)
		// An error or a diverging epoch is answered at once, as Kafka does:
		// the consumer has to act on it, not wait for data.
		if urgent || total >= int(req.MinBytes) || remaining <= 0 || ctx.Err() != nil || len(wake) == 0 {
			return out
		}
		if !waitAny(ctx, wake, remaining) {
			return out
		}
	}
}

// arenaHint is the buffer size a response to req most likely needs: the
// sum of its partitions' byte limits, within the request's own limit. Past
// 16 MiB the buffer grows as batches come, rather than hold memory up front
// for partitions that may have nothing new.
func arenaHint(req *kmsg.FetchRequest) int {
	limit := min(responseLimit(req), 16<<20)
	n := 0
	for _, t := range req.Topics {
		for _, p := range t.Partitions {
			n += int(max(p.PartitionMaxBytes, 0))
			if n >= limit {
				return limit
			}
		}
	}
	return n
}

// waitAny blocks until one channel closes (true), or the timeout or ctx
// ends the wait (false).
func waitAny(ctx context.Context, chans []<-chan struct{}, timeout time.Duration) bool {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	// Most fetches name one topic; a dynamic select is only needed for more.
	if len(chans) == 1 {
		select {
		case <-chans[0]:
			return true
		case <-timer.C:
		case <-ctx.Done():
		}
		return false
	}
	woke := make(chan struct{})
	stop := make(chan struct{})
	defer close(stop)
	for _, ch := range chans {
		go func() {
			select {
			case <-ch:
				select {
				case woke <- struct{}{}:
				case <-stop:
				}
			case <-stop:
			}
		}()
	}
	select {
	case <-woke:
		return true
	case <-timer.C:
	case <-ctx.Done():
	}
	return false
}

// maxFetchBytes caps a response whatever the client asks, as Kafka's
// fetch.max.bytes does.
const maxFetchBytes = 55 << 20

// responseLimit is the byte limit of the whole response to req: its
// MaxBytes (v3+), within maxFetchBytes.
func responseLimit(req *kmsg.FetchRequest) int {
	if limit := int(req.MaxBytes); req.Version >= 3 && limit > 0 && limit <= maxFetchBytes {
		return limit
	}
	return maxFetchBytes
}

// readAll reads every requested partition into s.
func (r *Reader) readAll(ctx context.Context, reg *topics.Registry, req *kmsg.FetchRequest, s *batchSink) (
	resp *kmsg.FetchResponse, batches [][]Batches, total int, urgent bool) {
	resp = req.ResponseKind().(*kmsg.FetchResponse)
	// No fetch sessions: session id 0 tells clients to send full requests.
	resp.SessionID = 0
	maxBytes := responseLimit(req)
	for _, rt := range req.Topics {
		ot := kmsg.NewFetchResponseTopic()
		ot.Topic = rt.Topic
		var tb []Batches
		t, known := reg.Topic(rt.Topic)
		for _, rp := range rt.Partitions {
			op := kmsg.NewFetchResponseTopicPartition()
			op.Partition = rp.Partition
			op.HighWatermark, op.LastStableOffset, op.LogStartOffset = -1, -1, -1
			op.PreferredReadReplica = -1
			op.RecordBatches = []byte{} // never null (size -1): librdkafka rejects it as a parse failure
			if !known || rp.Partition < 0 || rp.Partition >= t.Index.Partitions() {
				op.ErrorCode = kerr.UnknownTopicOrPartition.Code
				urgent = true
			} else {
				r.readPartition(ctx, t, req.Version, rp, maxBytes-total, total == 0, &op, s)
				urgent = urgent || op.ErrorCode != 0 || op.DivergingEpoch.EndOffset >= 0
			}
			bs, flat := s.take()
			if flat != nil {
				op.RecordBatches = flat
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

// readPartition fills op and adds the partition's record batches to s.
func (r *Reader) readPartition(ctx context.Context, t *topics.Topic, version int16, rp kmsg.FetchRequestTopicPartition,
	budget int, first bool, op *kmsg.FetchResponseTopicPartition, s *batchSink) {
	p := rp.Partition
	// One view of the index for the whole answer: its epoch checks, its
	// offsets and its batches (issue 12: a truncation between two lookups
	// mixed epochs in one answer).
	v := t.Index.View(p)
	hw := v.HighWatermark()
	op.HighWatermark, op.LastStableOffset, op.LogStartOffset = hw, hw, v.LogStart()
	if version >= 9 && rp.CurrentLeaderEpoch >= 0 {
		// Only a rewrite fences: the leader epoch rises with every
		// snapshot (offsets/epochs.go), and a client that has not seen
		// the newest one still holds offsets that mean what they did.
		switch {
		case rp.CurrentLeaderEpoch < v.FenceEpoch():
			op.ErrorCode = kerr.FencedLeaderEpoch.Code
			return
		case rp.CurrentLeaderEpoch > v.LeaderEpoch():
			op.ErrorCode = kerr.UnknownLeaderEpoch.Code
			return
		}
	}
	if version >= 12 && rp.LastFetchedEpoch >= 0 {
		// The consumer says which epoch its last record came from. If that
		// epoch ended before its fetch offset (a history rewrite truncated
		// the log), tell it where to truncate to instead of serving records
		// that do not follow the ones it has.
		if epoch, end, ok := v.EpochEnd(rp.LastFetchedEpoch); ok && (epoch < rp.LastFetchedEpoch || end < rp.FetchOffset) {
			op.DivergingEpoch.Epoch, op.DivergingEpoch.EndOffset = epoch, end
			return
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
			return
		}
	}
	if rp.FetchOffset == hw {
		if err := t.IndexError(); err != nil {
			// The next snapshot cannot be read (a damaged table): say so
			// rather than let the consumer wait forever in silence.
			op.ErrorCode = kerr.KafkaStorageError.Code
		}
		return
	}
	limit := int(rp.PartitionMaxBytes)
	if limit <= 0 || limit > budget {
		limit = budget
	}
	if limit <= 0 && !first {
		return
	}
	compression := t.Config.Compression
	if compression == "zstd" && version < 10 {
		// zstd needs Fetch v10+: older clients cannot decode it.
		compression = "none"
	}
	err := r.read(ctx, t, &v, p, rp.FetchOffset, max(limit, 1), compression, s)
	// read may have moved to a newer view (a segment gone before any batch
	// was in hand): answer with the offsets of the one its batches are from.
	hw = v.HighWatermark()
	op.HighWatermark, op.LastStableOffset, op.LogStartOffset = hw, hw, v.LogStart()
	switch {
	case errors.Is(err, ErrOffsetOutOfRange):
		op.ErrorCode = kerr.OffsetOutOfRange.Code
	case err != nil:
		if ctx.Err() == nil {
			// Kind per topic: served topics are a bounded set.
			r.failures.Event(r.log, zerolog.ErrorLevel, "fetch failed: "+t.Name).Err(err).Str("topic", t.Name).Int32("partition", p).
				Int64("offset", rp.FetchOffset).Msg("fetch failed")
		}
		if s.n == 0 {
			// Serve what was read before the failure, if anything.
			op.ErrorCode = kerr.KafkaStorageError.Code
		}
	}
}
