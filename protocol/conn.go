package protocol

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lakegw/lakegw/fetch"
	"github.com/lakegw/lakegw/internal/bytepool"
	"github.com/lakegw/lakegw/protocol/groups"
)

// conn is one client connection. A reader goroutine (serve) decodes
// requests and hands each to its own handler goroutine; a writer goroutine
// sends the responses in request order, as the protocol requires. At most
// MaxInflightPerConn requests are in flight: the reader blocks beyond that,
// which pushes back on the client through TCP. A request whose answer's
// size does not follow from its own (Server.ownTurn: a Fetch, the
// Metadata of every topic, a group's every offset) is handled in the
// connection's turn, as a Kafka broker handles every request: from when
// it is read until its answer is written, and the next request is read
// only then. A client pipelining them without reading the answers holds
// one such answer, not one per request in flight.
type conn struct {
	s        *Server
	nc       net.Conn
	host     string
	log      zerolog.Logger
	handlers sync.WaitGroup
	// writeTimeout bounds each response's write (0: none).
	writeTimeout time.Duration
	// outstanding counts the requests read whose answers are not yet
	// written: a connection waiting for them is not idle.
	outstanding atomic.Int64
	// turn is held by a request of Server.ownTurn from when it is read
	// until its answer is written (see readLoop).
	turn chan struct{}
	// lastProduce is closed when the last produce request read has
	// submitted its batches (produceTurn); readLoop's goroutine only.
	lastProduce chan struct{}
}

func newConn(s *Server, nc net.Conn) *conn {
	host, _, _ := net.SplitHostPort(nc.RemoteAddr().String())
	return &conn{s: s, nc: nc, host: host, writeTimeout: s.cfg.WriteTimeout, turn: make(chan struct{}, 1),
		log: s.log.With().Str("client", nc.RemoteAddr().String()).Logger()}
}

// frame is one framed response. pooled frames go back to bytepool once
// written. When spans is set, the frame is spans: slices of b, and
// buffers and file ranges it does not own.
type frame struct {
	b      []byte
	pooled bool
	spans  []fetch.Span
	// holds owns the buffers and files of spans: released with the
	// frame, told when a file of it cannot be read.
	holds *fetch.Spans
	// answered is called once the frame is written or dropped: what its
	// request holds until then goes back.
	answered func()
}

// pending is the response slot of one request; a frame with nil bytes
// closes the connection once the responses before it are written.
type pending chan frame

func (c *conn) serve(parent context.Context) {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	defer c.nc.Close()
	slots := make(chan pending, c.s.cfg.MaxInflightPerConn)
	writerDone := make(chan pending, 1)
	go func() {
		writerDone <- c.writeLoop(ctx, cancel, slots)
	}()
	c.readLoop(ctx, slots)
	// The client is gone or misbehaved: nothing more can be answered, so
	// stop the handlers still running (a long-polling Fetch, a JoinGroup)
	// rather than let them work for nobody.
	cancel()
	close(slots)
	unwritten := <-writerDone
	// The connection owns its handlers: it ends when they have.
	c.handlers.Wait()
	discardUnwritten(unwritten, slots)
}

// discardUnwritten gives back what the frames never written hold (disk
// cache files among it): the slot the writer took last, if it did not
// write it, and those left in slots (closed). Every handler must have put
// its frame in its slot.
func discardUnwritten(unwritten pending, slots <-chan pending) {
	if unwritten != nil {
		discard(<-unwritten)
	}
	for slot := range slots {
		discard(<-slot)
	}
}

// discard gives back what a frame that will not be written holds.
func discard(f frame) { f.finish() }

// finish gives back what a frame holds once it is written or dropped.
func (f frame) finish() {
	if f.holds != nil {
		f.holds.Release()
	}
	if f.pooled {
		// bufio has copied or written it: nothing refers to it now.
		bytepool.Put(f.b)
	}
	if f.answered != nil {
		f.answered()
	}
}

// writeLoop writes the responses in order until the slots are closed or the
// connection fails; it returns the slot it took but did not write, if any.
func (c *conn) writeLoop(ctx context.Context, cancel context.CancelFunc, slots <-chan pending) (unwritten pending) {
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
		default:
			// The next answer is not ready (a long-polling Fetch, a
			// JoinGroup waiting for its group): what is buffered goes out
			// now rather than wait behind it.
			if w.Buffered() > 0 {
				if err := w.Flush(); err != nil {
					fail(err)
					return slot
				}
			}
			select {
			case resp = <-slot:
			case <-ctx.Done():
				return slot
			}
		}
		if resp.b == nil {
			// The handler asked to close: flush what came before first.
			resp.finish()
			_ = w.Flush()
			cancel()
			c.nc.Close()
			return nil
		}
		err := c.write(w, resp)
		resp.finish()
		if err != nil {
			fail(err)
			return nil
		}
		// Flush when no further response is queued: pipelined responses
		// share writes without delaying the last one.
		if len(slots) == 0 && w.Buffered() > 0 {
			if err := w.Flush(); err != nil {
				fail(err)
				return nil
			}
		}
	}
	_ = w.Flush()
	return nil
}

// write sends one frame: through the buffered writer, or, for a frame of
// spans, after what is buffered, with writev and sendfile.
func (c *conn) write(w *bufio.Writer, f frame) error {
	if c.writeTimeout > 0 {
		if err := c.nc.SetWriteDeadline(time.Now().Add(c.writeTimeout)); err != nil {
			return err
		}
	}
	if f.spans == nil {
		_, err := w.Write(f.b)
		return err
	}
	if err := w.Flush(); err != nil {
		return err
	}
	err := writeSpans(c.nc, f.spans)
	if fe := (*fileError)(nil); errors.As(err, &fe) && f.holds != nil {
		f.holds.FileFailed(fe.err)
	}
	return err
}

// readLoop reads requests and hands each to a handler goroutine, in
// order, until the connection ends or misbehaves.
func (c *conn) readLoop(ctx context.Context, slots chan<- pending) {
	r := bufio.NewReaderSize(c.nc, 64<<10)
	for {
		body, err := c.readFrame(ctx, r)
		if err != nil {
			c.logReadEnd(ctx, err)
			return
		}
		// Decoding allocates a multiple of the frame: its weight stays
		// taken from the server-wide budget until the response is written
		// (Kafka's queued.max.request.bytes), so a client that does not
		// read its answers holds the budget, not the server's memory.
		release := func() { c.s.inflight.Release(int64(len(body))) }
		req, err := parseRequest(body)
		if err != nil {
			release()
			kind := malformedRequest
			if ce := (*clientError)(nil); errors.As(err, &ce) {
				kind = ce.kind // an API or version we do not serve
			}
			c.s.clientErrs.Warn(c.log, kind).Err(err).Msg(kind)
			return
		}
		if req.unsupported != nil {
			// Answered below (earlyResponse); the connection stays open.
			c.s.clientErrs.Warn(c.log, unsupportedVersion).Err(req.unsupported).Str("client_id", req.clientID).Msg(unsupportedVersion)
		}
		answered := func() { release(); c.outstanding.Add(-1) }
		if c.s.ownTurn[req.msg.Key()] {
			// Clients send one Fetch per broker at a time, and Metadata
			// or group listings now and then: none waits here long.
			select {
			case c.turn <- struct{}{}:
			case <-ctx.Done():
				release()
				return
			}
			answered = func() {
				release()
				<-c.turn
				c.outstanding.Add(-1)
			}
		}
		c.outstanding.Add(1)
		slot := make(pending, 1)
		select {
		case slots <- slot:
		case <-ctx.Done():
			answered()
			return
		}
		if req.earlyResponse != nil {
			slot <- frame{b: req.earlyResponse, answered: answered}
			continue
		}
		hctx := ctx
		if req.msg.Key() == kmsg.Produce.Int16() {
			hctx = withProduceTurn(ctx, c.nextProduceTurn())
		}
		c.handlers.Add(1)
		go func() {
			defer c.handlers.Done()
			f := c.handle(hctx, req)
			f.answered = answered
			slot <- f
		}()
	}
}

// logReadEnd logs why the reading of a connection ended: a client's
// misbehaviour at most once a second per kind (internal/limitedlog), the rest at
// debug level, a client hanging up or the server stopping not at all.
func (c *conn) logReadEnd(ctx context.Context, err error) {
	var ce *clientError
	switch {
	case errors.As(err, &ce):
		c.s.clientErrs.Warn(c.log, ce.kind).Err(ce.err).Msg(ce.kind)
	case errors.Is(err, errIdle):
		c.log.Debug().Dur("idle", c.s.cfg.ConnectionsMaxIdle).Msg("closing idle connection")
	case errors.Is(err, io.EOF) || ctx.Err() != nil || errors.Is(err, net.ErrClosed):
	default:
		c.log.Debug().Err(err).Msg("read request")
	}
}

// handle runs one request's handler and frames its response; a nil frame
// closes the connection.
func (c *conn) handle(ctx context.Context, req *request) (out frame) {
	var own selfFramed
	defer func() {
		// A handler bug must not take the gateway down with it.
		if p := recover(); p != nil {
			c.log.Error().Interface("panic", p).Int16("api_key", req.msg.Key()).Msg("handler panicked; closing connection")
			if own != nil {
				own.release()
			}
			out = frame{}
		}
	}()
	h, ok := handlers[req.msg.Key()]
	if !ok {
		c.s.clientErrs.Warn(c.log, unsupportedKey).Int16("api_key", req.msg.Key()).Msg(unsupportedKey)
		return frame{}
	}
	// The group coordinator names members after the client id and host.
	ctx = groups.WithClient(ctx, req.clientID, c.host)
	resp, err := h.handle(ctx, c, req.msg)
	if err != nil {
		if ctx.Err() == nil {
			c.s.clientErrs.Warn(c.log, failedRequest).Err(err).Int16("api_key", req.msg.Key()).Int16("version", req.msg.GetVersion()).Msg(failedRequest)
		}
		return frame{}
	}
	if resp == nil {
		return frame{b: noResponse}
	}
	if own, _ = resp.(selfFramed); own != nil {
		return own.frameFor(c, req)
	}
	return frame{b: frameResponse(req, resp, make([]byte, 0, 256))}
}

// selfFramed is an answer that lays out its own frame rather than be
// encoded whole by frameResponse: a Fetch answer, whose record batches are
// spans of memory and of the disk cache's files (fetchAnswer). release
// gives back what it holds when no frame is made of it (a handler panic).
type selfFramed interface {
	kmsg.Response
	frameFor(c *conn, req *request) frame
	release()
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
