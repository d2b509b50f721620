package protocol

import "github.com/twmb/franz-go/pkg/kmsg"

// bufferedResponse is a response whose bytes live in a pooled buffer (a
// Fetch's record batches): the connection frames it into a frame of about
// size bytes, then calls release.
type bufferedResponse struct {
	kmsg.Response
	release func()
	size    int
}
