package protocol

import (
	"context"

	"github.com/twmb/franz-go/pkg/kmsg"
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
// The answer is a *fetch.Response: its record batches live in a pooled
// buffer and in files of the batch disk cache, and the connection writes
// them from there (fetchFrame, writeSpans), then releases them.
func init() { register(kmsg.Fetch, 4, 12, handleFetch) }

func handleFetch(ctx context.Context, c *conn, req *kmsg.FetchRequest) (kmsg.Response, error) {
	collapseDuplicatePartitions(req)
	return c.s.reader.Serve(ctx, c.s.reg, req), nil
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
