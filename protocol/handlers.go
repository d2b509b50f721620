package protocol

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// handler answers one API key within a version range.
type handler struct {
	min, max int16
	handle   func(ctx context.Context, c *conn, req kmsg.Request) (kmsg.Response, error)
}

// handlers is filled by the init function of each API's file, next to the
// notes on what each version adds.
var handlers = map[int16]handler{}

func register[Req kmsg.Request](key kmsg.Key, min, max int16, fn func(ctx context.Context, c *conn, req Req) (kmsg.Response, error)) {
	handlers[key.Int16()] = handler{min: min, max: max, handle: func(ctx context.Context, c *conn, req kmsg.Request) (kmsg.Response, error) {
		return fn(ctx, c, req.(Req))
	}}
}

// supportedApiKeys lists our version ranges for ApiVersions, sorted by key.
func supportedApiKeys() []kmsg.ApiVersionsResponseApiKey {
	out := make([]kmsg.ApiVersionsResponseApiKey, 0, len(handlers))
	for k, h := range handlers {
		out = append(out, kmsg.ApiVersionsResponseApiKey{ApiKey: k, MinVersion: h.min, MaxVersion: h.max})
	}
	slices.SortFunc(out, func(a, b kmsg.ApiVersionsResponseApiKey) int { return int(a.ApiKey) - int(b.ApiKey) })
	return out
}
