package protocol

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lakegw/lakegw/fetch"
	"github.com/lakegw/lakegw/topics"
)

// Fetch (key 1)
//
// v4: isolation level, last stable offset, aborted transactions (never any:
// everything committed is stable). v5: log start offset. v7: fetch
// sessions (we answer session id 0: full requests every time). v9: current
// leader epoch. v10: zstd allowed. v11: rack, preferred read replica. v12:
// flexible, last fetched epoch, diverging epoch. Never advertised below v4
// (clients mishandle old message formats we do not write).
//
// The answer is a *fetchAnswer: its record batches live in a pooled buffer
// and in files of the batch disk cache (a fetch.Spans), and the connection
// writes them from there (fetchFrame, writeSpans), then releases them.
func init() { register(kmsg.Fetch, 4, 12, handleFetch) }

func handleFetch(ctx context.Context, c *conn, req *kmsg.FetchRequest) (kmsg.Response, error) {
	collapseDuplicatePartitions(req)
	return c.s.answerFetch(ctx, req), nil
}

// fetchAnswer is a Fetch response with its record batches: batches[i][j]
// are those of Topics[i].Partitions[j], whose RecordBatches stay empty
// (fetchFrame lays the batches out around the rest). spans holds them
// until the answer is written.
type fetchAnswer struct {
	*kmsg.FetchResponse
	batches [][]fetch.Batches
	spans   *fetch.Spans
}

// maxWaitCap bounds a client's MaxWait so a hostile value cannot pin a
// handler goroutine for days.
const maxWaitCap = 5 * time.Minute

// answerFetch reads what req asks for and, while fewer than MinBytes are
// available, waits up to MaxWait for new snapshots of the requested topics
// (woken by the topics' change channels, no polling).
func (s *Server) answerFetch(ctx context.Context, req *kmsg.FetchRequest) *fetchAnswer {
	spans := s.reader.NewSpans(arenaHint(req))
	defer func() {
		// An encoder bug panics (the connection recovers and closes): the
		// disk cache files this read referred to must still go back.
		if p := recover(); p != nil {
			spans.Release()
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
			if t, ok := s.reg.Topic(rt.Topic); ok && !seen[t] {
				seen[t] = true
				wake = append(wake, t.Changed())
			}
		}
		// Each pass reads afresh into the same buffer: a response not sent
		// is dropped whole, with the disk cache files it referred to.
		spans.Reset()
		resp, batches, total, urgent := s.readFetch(ctx, req, spans)
		out := &fetchAnswer{FetchResponse: resp, batches: batches, spans: spans}
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

// collapseDuplicatePartitions keeps the first mention of each
// topic-partition of req, merging the partitions of a topic named twice:
// Kafka answers each topic-partition once, and without this one Fetch
// naming partition 0 10,000 times was answered with its batches up to the
// response limit (57.7 MB) instead of once.
func collapseDuplicatePartitions(req *kmsg.FetchRequest) {
	type tp struct {
		topic     string
		partition int32
	}
	seen := map[tp]bool{}
	topicAt := map[string]int{}
	topics := req.Topics[:0]
	for _, rt := range req.Topics {
		parts := rt.Partitions[:0]
		for _, rp := range rt.Partitions {
			k := tp{rt.Topic, rp.Partition}
			if !seen[k] {
				seen[k] = true
				parts = append(parts, rp)
			}
		}
		rt.Partitions = parts
		// Topic ids (v13+) are not spoken here: the name identifies it.
		if i, ok := topicAt[rt.Topic]; ok {
			topics[i].Partitions = append(topics[i].Partitions, rt.Partitions...)
			continue
		}
		topicAt[rt.Topic] = len(topics)
		topics = append(topics, rt)
	}
	req.Topics = topics
}
