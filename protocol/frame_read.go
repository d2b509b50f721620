package protocol

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"time"
)

// readChunk bounds how much of a request body is read, and taken from the
// server-wide request memory, at a time. A frame's memory is taken only for
// bytes that have arrived (in the connection's read buffer), never for its
// announced size: connections that announce large frames and send nothing
// hold none of it, however many they are. (Taken 64 KiB ahead of the bytes,
// 1,024 such connections held the whole 64 MiB budget.)
const readChunk = 64 << 10

// errIdle ends a connection that sent nothing for connections.max.idle.ms
// while it had no request in flight.
var errIdle = errors.New("connection idle")

// clientError is a connection ended by what the client sent (or failed
// to send); kind is its limitedlog kind and log message.
type clientError struct {
	kind string
	err  error
}

func (e *clientError) Error() string { return e.kind + ": " + e.err.Error() }
func (e *clientError) Unwrap() error { return e.err }

// The kinds of clientError.
const (
	badFrameSize     = "closing connection: request frame size out of bounds"
	slowFrame        = "closing connection: request frame not received within the frame read timeout"
	truncatedFrame   = "closing connection: truncated request frame"
	malformedRequest = "closing connection: malformed request"
	unsupportedKey   = "closing connection: unsupported API key"
	failedRequest    = "closing connection: request failed"
	// unsupportedVersion is a request at a version outside its API's
	// range that is answered UNSUPPORTED_VERSION (unsupported_version.go);
	// unsupportedVersionClosed one that cannot be.
	unsupportedVersion       = "unsupported API version: answered UNSUPPORTED_VERSION"
	unsupportedVersionClosed = "closing connection: unsupported API version"
)

// awaitFrame waits for the first byte of the next frame. A connection that
// sends nothing for ConnectionsMaxIdle while none of its requests is in
// flight is idle (Kafka's connections.max.idle.ms); one waiting for its
// answers (a long-polling Fetch) is not.
func (c *conn) awaitFrame(r *bufio.Reader) error {
	idle := c.s.cfg.ConnectionsMaxIdle
	for {
		var deadline time.Time
		if idle > 0 {
			deadline = time.Now().Add(idle)
		}
		if err := c.nc.SetReadDeadline(deadline); err != nil {
			return fmt.Errorf("set idle deadline: %w", err)
		}
		_, err := r.Peek(1)
		if err == nil {
			return nil
		}
		if !isTimeout(err) {
			return err
		}
		if c.outstanding.Load() == 0 {
			return errIdle
		}
	}
}

// readFrame reads the body of the next request frame (without its size
// prefix). Once its first byte is in, the whole frame must arrive within
// FrameReadTimeout: Kafka has no such bound, but without one a client that
// starts a frame and stops holds its connection and its memory forever.
// The body's bytes are taken from the server-wide request memory as they
// arrive; the caller gives back len(body) once the request is handled.
func (c *conn) readFrame(ctx context.Context, r *bufio.Reader) ([]byte, error) {
	if err := c.awaitFrame(r); err != nil {
		return nil, err
	}
	if t := c.s.cfg.FrameReadTimeout; t > 0 {
		if err := c.nc.SetReadDeadline(time.Now().Add(t)); err != nil {
			return nil, fmt.Errorf("set frame deadline: %w", err)
		}
	}
	var sizeBuf [4]byte
	if _, err := io.ReadFull(r, sizeBuf[:]); err != nil {
		return nil, frameReadError(fmt.Errorf("read request size: %w", err))
	}
	size := int32(binary.BigEndian.Uint32(sizeBuf[:]))
	if size < 8 || size > c.s.cfg.MaxRequestBytes {
		return nil, &clientError{kind: badFrameSize, err: fmt.Errorf("size %d, max %d", size, c.s.cfg.MaxRequestBytes)}
	}
	// Allocated as the bytes arrive too: a stalled frame holds none.
	var body []byte
	for len(body) < int(size) {
		// Wait for bytes, then take memory for those already in.
		if _, err := r.Peek(1); err != nil {
			c.s.inflight.Release(int64(len(body)))
			return nil, frameReadError(fmt.Errorf("read request body (%d of %d bytes in): %w", len(body), size, err))
		}
		n := min(int(size)-len(body), r.Buffered(), readChunk)
		if err := c.s.inflight.Acquire(ctx, int64(n)); err != nil {
			c.s.inflight.Release(int64(len(body)))
			return nil, fmt.Errorf("wait for request memory: %w", err)
		}
		at := len(body)
		body = slices.Grow(body, n)[:at+n]
		if _, err := io.ReadFull(r, body[at:]); err != nil {
			// Only buffered bytes are read: this does not fail in practice.
			c.s.inflight.Release(int64(len(body)))
			return nil, frameReadError(fmt.Errorf("read request body (%d of %d bytes in): %w", at, size, err))
		}
	}
	return body, nil
}

// frameReadError classes a failed read inside a started frame.
func frameReadError(err error) error {
	if isTimeout(err) {
		return &clientError{kind: slowFrame, err: err}
	}
	if errors.Is(err, net.ErrClosed) {
		return err
	}
	return &clientError{kind: truncatedFrame, err: err}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
