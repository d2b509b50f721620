package protocol

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// syncBuffer is a log sink safe for the connections' goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (s *syncBuffer) lines(msg string) []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(s.b.String(), "\n") {
		var m map[string]any
		if json.Unmarshal([]byte(l), &m) == nil && m["message"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// A client sending malformed frames by the hundred cannot flood the log
// (issue 12, "logs: repeated client errors are rate-limited and
// counted"): 300 connections each sending a frame that does not decode
// give one warning line, and the next line, a second later, counts every
// one of them it left out.
func TestMalformedFrameFloodIsOneLineASecond(t *testing.T) {
	var sink syncBuffer
	s := NewServer(Config{Listen: "127.0.0.1:0"}, nil, nil, nil, zerolog.New(&sink))
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = s.Serve(ctx)
	}()
	defer func() { cancel(); <-served }()
	// A frame of 12 bytes: ApiVersions v3, a correlation id, and a client
	// id said to be 32,767 bytes long that is not there.
	malformed := binary.BigEndian.AppendUint32(nil, 12)
	malformed = append(malformed, 0, 18, 0, 3, 0, 0, 0, 1, 0x7f, 0xff, 0, 0)
	send := func() {
		nc, err := net.Dial("tcp", s.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		if _, err := nc.Write(malformed); err != nil {
			t.Fatal(err)
		}
		// The server closes the connection once it has logged (or not).
		_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.Copy(io.Discard, nc); err != nil {
			t.Fatalf("the connection was not closed: %v", err)
		}
	}
	const flood = 300
	start := time.Now()
	for range flood {
		send()
	}
	if time.Since(start) >= time.Second {
		t.Skipf("the flood took %v, more than the one-second interval", time.Since(start))
	}
	lines := sink.lines(malformedRequest)
	if len(lines) != 1 {
		t.Fatalf("%d malformed frames in %v gave %d log lines, want 1; log:\n%s", flood, time.Since(start), len(lines), sink.String())
	}
	time.Sleep(time.Until(start.Add(1100 * time.Millisecond)))
	send()
	lines = sink.lines(malformedRequest)
	if len(lines) != 2 {
		t.Fatalf("after the interval: %d lines, want 2", len(lines))
	}
	if got := lines[1]["suppressed_since_last"]; got != float64(flood-1) {
		t.Fatalf("the second line counts %v left out, want %d", got, flood-1)
	}
	if got := lines[1]["total"]; got != float64(flood+1) {
		t.Fatalf("the second line counts %v in all, want %d", got, flood+1)
	}
}
