package protocol

import (
	"context"
	"sync"
)

// produceTurn orders a connection's produce requests: each is handled in
// its own goroutine, like every request, but submits its batches only
// after the request read before it has (a broker appends a connection's
// requests in order, and an idempotent producer pipelines its batches of
// one partition in sequence on one connection).
type produceTurn struct {
	prev <-chan struct{} // closed when the previous produce request submitted (nil: none)
	next chan struct{}   // closed by done
	once sync.Once
}

// nextProduceTurn is the turn of the connection's next produce request;
// readLoop's goroutine only.
func (c *conn) nextProduceTurn() *produceTurn {
	t := &produceTurn{prev: c.lastProduce, next: make(chan struct{})}
	c.lastProduce = t.next
	return t
}

// wait returns when the previous produce request has submitted, or ctx
// ended (then the order is moot: the request fails).
func (t *produceTurn) wait(ctx context.Context) {
	if t == nil || t.prev == nil {
		return
	}
	select {
	case <-t.prev:
	case <-ctx.Done():
	}
}

// done lets the next produce request submit; a second call does nothing
// (the handler also defers it, for a panic).
func (t *produceTurn) done() {
	if t != nil {
		t.once.Do(func() { close(t.next) })
	}
}

type produceTurnKey struct{}

func withProduceTurn(ctx context.Context, t *produceTurn) context.Context {
	if t == nil {
		return ctx
	}
	return context.WithValue(ctx, produceTurnKey{}, t)
}

// produceTurnOf is the turn of the produce request handled under ctx (nil
// when it has none: a test calling the handler directly).
func produceTurnOf(ctx context.Context) *produceTurn {
	t, _ := ctx.Value(produceTurnKey{}).(*produceTurn)
	return t
}
