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
	return c.s.reader.Serve(ctx, c.s.reg, req), nil
}
