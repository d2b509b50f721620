package protocol

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lakegw/lakegw/fetch"
)

// Every frame a handler produced is released exactly once, written or not:
// a Fetch frame holds disk cache files open until it is.
func TestFramesNeverWrittenAreReleased(t *testing.T) {
	for _, tc := range []struct {
		name string
		// broken: the first frame's write fails; stalled: it times out
		// (the client does not read); else the connection is cancelled
		// while the writer waits for the first frame.
		broken, stalled bool
	}{{name: "write fails", broken: true}, {name: "client stops reading", broken: true, stalled: true}, {name: "connection cancelled"}} {
		t.Run(tc.name, func(t *testing.T) {
			w, r := net.Pipe()
			defer w.Close()
			if tc.broken && !tc.stalled {
				r.Close() // the first write fails
			} else {
				defer r.Close()
			}
			c := &conn{nc: w, log: zerolog.Nop(), writeTimeout: 50 * time.Millisecond}
			released := make([]int, 3)
			frameOf := func(i int) frame {
				return frame{b: []byte("response"), done: func() { released[i]++ }}
			}
			slots := make(chan pending, 3)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			first := make(pending, 1)
			slots <- first
			rest := []pending{make(pending, 1), make(pending, 1)}
			for _, s := range rest {
				slots <- s
			}
			close(slots)
			if tc.broken {
				// Written straight to the connection, as a Fetch frame is.
				f := frameOf(0)
				f.spans = []fetch.Span{fetch.BytesSpan(f.b)}
				first <- f
			} else {
				// The writer waits for the first frame; the connection
				// ends before it comes.
				cancel()
			}
			unwritten := c.writeLoop(ctx, cancel, slots)
			// The handlers finish after the writer stopped.
			if !tc.broken {
				first <- frameOf(0)
			}
			for i, s := range rest {
				s <- frameOf(i + 1)
			}
			discardUnwritten(unwritten, slots)
			for i, n := range released {
				if n != 1 {
					t.Errorf("frame %d released %d times, want once", i, n)
				}
			}
		})
	}
}
