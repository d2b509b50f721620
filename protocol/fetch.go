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
func init() { register(kmsg.Fetch, 4, 12, handleFetch) }

func handleFetch(ctx context.Context, c *conn, req *kmsg.FetchRequest) (kmsg.Response, error) {
	resp, release := c.s.reader.Serve(ctx, c.s.reg, req)
	size := 1024
	for _, t := range resp.Topics {
		size += len(t.Topic) + 64*len(t.Partitions)
		for _, p := range t.Partitions {
			size += len(p.RecordBatches)
		}
	}
	return &bufferedResponse{Response: resp, release: release, size: size}, nil
}
