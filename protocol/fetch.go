package protocol

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
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
// flexible, last fetched epoch, diverging epoch. v13: topics (and
// forgotten topics) by topic id, the table UUID (Topic.ID) as Metadata
// gives it; an id no topic has is UNKNOWN_TOPIC_ID. v14: may return
// OFFSET_MOVED_TO_TIERED_STORAGE (never here: nothing is tiered). v15: the
// replica id moves into the ReplicaState tag (KIP-903). v16: NodeEndpoints
// and CurrentLeader for partitions fenced or not led here (KIP-951). v17:
// a follower's directory id (KIP-853). v18: a follower's high watermark
// (KIP-1166). Never advertised below v4 (clients mishandle old message
// formats we do not write): a request below it is answered
// UNSUPPORTED_VERSION (unsupported_version.go).
//
// Fetch sessions (KIP-227): none is ever created, which a Kafka broker
// whose session cache is full also answers: session id 0, and the client
// sends full requests. A full request (session epoch 0 or -1) is answered
// whatever session id it names (Kafka closes that session, and there is
// none); an incremental one (any other epoch) names a session this gateway
// does not have: FETCH_SESSION_ID_NOT_FOUND, as Kafka's FetchManager
// answers a session it lost. Forgotten topics only ever edit a session, so
// they are never read. The replica id and state, directory id and follower
// high watermark are a follower's: there are none (every fetch is a
// consumer's, answered up to the high watermark).
//
// The answer is a *fetchAnswer: its record batches live in a pooled buffer
// and in files of the batch disk cache (a fetch.Spans), and the connection
// writes them from there (fetchFrame, writeSpans), then releases them.
func init() { register(kmsg.Fetch, 4, 18, handleFetch) }

// The session epochs of a full fetch request: the first of a session, and
// one that wants none (Kafka's FetchMetadata INITIAL_EPOCH, FINAL_EPOCH).
const (
	sessionEpochInitial = 0
	sessionEpochFinal   = -1
)

func handleFetch(ctx context.Context, c *conn, req *kmsg.FetchRequest) (kmsg.Response, error) {
	if req.SessionEpoch != sessionEpochInitial && req.SessionEpoch != sessionEpochFinal {
		resp := req.ResponseKind().(*kmsg.FetchResponse)
		resp.ErrorCode = kerr.FetchSessionIDNotFound.Code
		return &fetchAnswer{FetchResponse: resp, spans: c.s.reader.NewSpans(0)}, nil
	}
	collapseDuplicatePartitions(req)
	if req.Version >= 13 {
		c.s.nameTopicsByID(req)
	}
	return c.s.answerFetch(ctx, req), nil
}

// nameTopicsByID gives each topic of a v13+ request, named by id, the name
// it is served under (left empty when no topic has that id): the rest of
// the handler goes by names, and answers with the ids the request used.
func (s *Server) nameTopicsByID(req *kmsg.FetchRequest) {
	for i := range req.Topics {
		rt := &req.Topics[i]
		rt.Topic = ""
		if t, ok := s.reg.TopicByID(rt.TopicID); ok {
			rt.Topic = t.Name
		}
	}
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
	// A topic is named by its name up to v12 and by its id from v13: the
	// other is empty.
	type topicKey struct {
		name string
		id   [16]byte
	}
	type tp struct {
		topic     topicKey
		partition int32
	}
	seen := map[tp]bool{}
	topicAt := map[topicKey]int{}
	topics := req.Topics[:0]
	for _, rt := range req.Topics {
		key := topicKey{rt.Topic, rt.TopicID}
		parts := rt.Partitions[:0]
		for _, rp := range rt.Partitions {
			k := tp{key, rp.Partition}
			if !seen[k] {
				seen[k] = true
				parts = append(parts, rp)
			}
		}
		rt.Partitions = parts
		if i, ok := topicAt[key]; ok {
			topics[i].Partitions = append(topics[i].Partitions, rt.Partitions...)
			continue
		}
		topicAt[key] = len(topics)
		topics = append(topics, rt)
	}
	req.Topics = topics
}
