package protocol

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestRequestMemoryHeldUntilTheResponseIsWritten: a client pipelines
// three 1 MiB requests and reads none of the answers. The first answer
// fills the connection's write buffer and the writer blocks on the
// socket; the two requests behind it keep their bytes taken from the
// server-wide budget until their answers are written (Kafka's
// queued.max.request.bytes), and give them back once the client reads.
// (Released when the handler returned, the budget was free while the
// answers piled up.)
func TestRequestMemoryHeldUntilTheResponseIsWritten(t *testing.T) {
	const reqBytes = 1 << 20
	s := NewServer(Config{MaxRequestBytes: 2 * reqBytes, MaxInflightBytes: 4 * reqBytes, WriteTimeout: 10 * time.Second},
		nil, nil, nil, zerolog.Nop())
	client, server := net.Pipe()
	defer client.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan struct{})
	go func() {
		defer close(served)
		newConn(s, server).serve(ctx)
	}()

	var frames []byte
	for i := range 3 {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version = 3
		req.ClientSoftwareName = strings.Repeat("x", reqBytes-64)
		req.ClientSoftwareVersion = "1"
		body := frameBody(req, int32(i), "test")
		frames = binary.BigEndian.AppendUint32(frames, uint32(len(body)))
		frames = append(frames, body...)
	}
	// net.Pipe has no buffer: the write returns once the server read it.
	if _, err := client.Write(frames); err != nil {
		t.Fatal(err)
	}

	// The first answer is in the write buffer, the writer waits on the
	// socket: two requests (2 MiB) still hold the budget.
	// Generous: under -race on a loaded 2-core machine the server took
	// over 5 s to read the three frames once.
	deadline := time.Now().Add(20 * time.Second)
	for s.inflight.TryAcquire(3 * reqBytes) {
		s.inflight.Release(3 * reqBytes)
		if time.Now().After(deadline) {
			t.Fatal("3 MiB of the 4 MiB budget free while two requests wait for their answers to be written")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !s.inflight.TryAcquire(reqBytes) {
		t.Fatal("less than 1 MiB of the budget free: more than two requests hold it")
	}
	s.inflight.Release(reqBytes)

	// The client reads its answers: the budget comes back whole.
	go func() { _, _ = io.Copy(io.Discard, client) }()
	for !s.inflight.TryAcquire(4 * reqBytes) {
		if time.Now().After(deadline) {
			t.Fatal("the budget did not come back once the answers were read")
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.inflight.Release(4 * reqBytes)
	cancel()
	client.Close()
	<-served
}
