package protocol

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lakegw/lakegw/internal/bytepool"
	"github.com/lakegw/lakegw/protocol/groups"
)

// conn is one client connection. A reader goroutine (serve) decodes
// requests and hands each to its own handler goroutine; a writer goroutine
// sends the responses in request order, as the protocol requires. At most
// MaxInflightPerConn requests are in flight: the reader blocks beyond that,
// which pushes back on the client through TCP.
type conn struct {
	s        *Server
	nc       net.Conn
	host     string
	log      zerolog.Logger
	handlers sync.WaitGroup
}

func newConn(s *Server, nc net.Conn) *conn {
	host, _, _ := net.SplitHostPort(nc.RemoteAddr().String())
	return &conn{s: s, nc: nc, host: host, log: s.log.With().Str("client", nc.RemoteAddr().String()).Logger()}
}

// frame is one framed response. pooled frames go back to bytepool once
// written. When bufs is set, the frame is bufs (slices of b and buffers it
// does not own), written with one writev, after which done is called.
type frame struct {
	b      []byte
	pooled bool
	bufs   net.Buffers
	done   func()
}

// pending is the response slot of one request; a frame with nil bytes
// closes the connection once the responses before it are written.
type pending chan frame

func (c *conn) serve(parent context.Context) {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	defer c.nc.Close()
	slots := make(chan pending, c.s.cfg.MaxInflightPerConn)
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		c.writeLoop(ctx, cancel, slots)
	}()
	c.readLoop(ctx, slots)
	// The client is gone or misbehaved: nothing more can be answered, so
	// stop the handlers still running (a long-polling Fetch, a JoinGroup)
	// rather than let them work for nobody.
	cancel()
	close(slots)
	<-writerDone
	// The connection owns its handlers: it ends when they have.
	c.handlers.Wait()
}

func (c *conn) writeLoop(ctx context.Context, cancel context.CancelFunc, slots <-chan pending) {
	w := bufio.NewWriterSize(c.nc, 64<<10)
	fail := func(err error) {
		c.log.Debug().Err(err).Msg("write response")
		cancel()
		c.nc.Close()
	}
	for slot := range slots {
		var resp frame
		select {
		case resp = <-slot:
		case <-ctx.Done():
			return
		}
		if resp.b == nil {
			// The handler asked to close: flush what came before first.
			_ = w.Flush()
			cancel()
			c.nc.Close()
			return
		}
		err := c.write(w, resp)
		if resp.done != nil {
			resp.done()
		}
		if resp.pooled {
			// bufio has copied or written it: nothing refers to it now.
			bytepool.Put(resp.b)
		}
		if err != nil {
			fail(err)
			return
		}
		// Flush when no further response is queued: pipelined responses
		// share writes without delaying the last one.
		if len(slots) == 0 && w.Buffered() > 0 {
			if err := w.Flush(); err != nil {
				fail(err)
				return
			}
		}
	}
	_ = w.Flush()
}

// write sends one frame: through the buffered writer, or, for a frame of
// several buffers, after what is buffered, with one writev.
func (c *conn) write(w *bufio.Writer, f frame) error {
	if f.bufs == nil {
		_, err := w.Write(f.b)
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	_, err := f.bufs.WriteTo(c.nc)
	return err
}

func (c *conn) readLoop(ctx context.Context, slots chan<- pending) {
	r := bufio.NewReaderSize(c.nc, 64<<10)
	var sizeBuf [4]byte
	for {
		if _, err := io.ReadFull(r, sizeBuf[:]); err != nil {
			if !errors.Is(err, io.EOF) && ctx.Err() == nil && !errors.Is(err, net.ErrClosed) {
				c.log.Debug().Err(err).Msg("read request size")
			}
			return
		}
		size := int32(binary.BigEndian.Uint32(sizeBuf[:]))
		if size < 8 || size > c.s.cfg.MaxRequestBytes {
			c.log.Warn().Int32("size", size).Int32("max", c.s.cfg.MaxRequestBytes).
				Msg("closing connection: request frame size out of bounds")
			return
		}
		// Decoding allocates a multiple of the frame: take its weight from
		// the server-wide budget until the request is answered.
		if err := c.s.inflight.Acquire(ctx, int64(size)); err != nil {
			return
		}
		release := func() { c.s.inflight.Release(int64(size)) }
		body := make([]byte, size)
		if _, err := io.ReadFull(r, body); err != nil {
			release()
			c.log.Warn().Err(err).Msg("closing connection: truncated request frame")
			return
		}
		req, err := parseRequest(body)
		if err != nil {
			release()
			c.log.Warn().Err(err).Msg("closing connection: malformed request")
			return
		}
		slot := make(pending, 1)
		select {
		case slots <- slot:
		case <-ctx.Done():
			release()
			return
		}
		if req.earlyResponse != nil {
			release()
			slot <- frame{b: req.earlyResponse}
			continue
		}
		c.handlers.Add(1)
		go func() {
			defer c.handlers.Done()
			defer release()
			slot <- c.handle(ctx, req)
		}()
	}
}

// handle runs one request's handler and frames its response; a nil frame
// closes the connection.
func (c *conn) handle(ctx context.Context, req *request) (out frame) {
	defer func() {
		// A handler bug must not take the gateway down with it.
		if p := recover(); p != nil {
			c.log.Error().Interface("panic", p).Int16("api_key", req.msg.Key()).Msg("handler panicked; closing connection")
			out = frame{}
		}
	}()
	h, ok := handlers[req.msg.Key()]
	if !ok {
		c.log.Warn().Int16("api_key", req.msg.Key()).Msg("closing connection: unsupported API key")
		return frame{}
	}
	// The group coordinator names members after the client id and host.
	ctx = groups.WithClient(ctx, req.clientID, c.host)
	resp, err := h.handle(ctx, c, req.msg)
	if err != nil {
		if ctx.Err() == nil {
			c.log.Warn().Err(err).Int16("api_key", req.msg.Key()).Int16("version", req.msg.GetVersion()).Msg("closing connection")
		}
		return frame{}
	}
	if resp == nil {
		return frame{b: noResponse}
	}
	if br, ok := resp.(*bufferedResponse); ok {
		br.SetVersion(req.msg.GetVersion())
		if fr, isFetch := br.Response.(*kmsg.FetchResponse); isFetch {
			// The record batches go to the socket from the buffer they
			// were read into, which goes back once they are written.
			head, bufs, ok := fetchFrame(bytepool.Get(4096), req.correlationID, fr)
			if ok {
				return frame{b: head, pooled: true, bufs: bufs, done: br.release}
			}
			bytepool.Put(head)
		}
		// Framed in a pooled buffer; the buffer the record batches were
		// read into goes back at once.
		b := frameResponse(req, br.Response, bytepool.Get(br.size))
		br.release()
		return frame{b: b, pooled: true}
	}
	return frame{b: frameResponse(req, resp, make([]byte, 0, 256))}
}

// noResponse marks a request answered by silence.
var noResponse = []byte{}

// frameResponse appends resp, framed with its size and header, to buf.
func frameResponse(req *request, resp kmsg.Response, buf []byte) []byte {
	resp.SetVersion(req.msg.GetVersion())
	buf = append(buf[:0], 0, 0, 0, 0, 0, 0, 0, 0)
	binary.BigEndian.PutUint32(buf[4:], uint32(req.correlationID))
	// The ApiVersions response header is always v0 (no tagged fields), so
	// that a client can read it before knowing which versions we speak.
	if resp.IsFlexible() && req.msg.Key() != kmsg.ApiVersions.Int16() {
		buf = append(buf, 0)
	}
	buf = resp.AppendTo(buf)
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	return buf
}

// errorf wraps a handler error with its API name.
func errorf(api string, format string, args ...any) error {
	return fmt.Errorf(api+": "+format, args...)
}
