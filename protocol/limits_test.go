package protocol

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func TestConnLimitsAdmitWithinTotalAndPerIP(t *testing.T) {
	l := newConnLimits(3, 2)
	for i, tc := range []struct {
		ip   string
		want string
	}{{"a", ""}, {"a", ""}, {"a", refusedMaxConnectionsPerIP}, {"b", ""}, {"c", refusedMaxConnections}} {
		if got := l.admit(tc.ip); got != tc.want {
			t.Fatalf("admit %d (%s) = %q, want %q", i, tc.ip, got, tc.want)
		}
	}
	l.leave("a")
	if got := l.admit("c"); got != "" {
		t.Fatalf("a place given back is not taken again: %q", got)
	}
	if got := l.admit("a"); got != refusedMaxConnections {
		t.Fatalf("admit past the total = %q", got)
	}
}

// The default connection limit follows the open-file limit but never
// passes maxDefaultConnections, whatever limit the process has: a raised
// limit (often a million) must not lift the memory bound with it.
func TestDefaultMaxConnectionsIsBounded(t *testing.T) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	got := defaultMaxConnections()
	if got <= 0 || got > maxDefaultConnections {
		t.Fatalf("default %d connections with an open-file limit of %d, want 1..%d", got, rl.Cur, maxDefaultConnections)
	}
	if n := int(rl.Cur); n-min(1024, n/2) < maxDefaultConnections && got != n-min(1024, n/2) {
		t.Fatalf("default %d connections, want the open-file limit %d less its reserve", got, n)
	}
	// Raised as far as the hard limit allows: still at most the bound.
	raised := rl
	raised.Cur = rl.Max
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &raised); err == nil {
		defer syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl)
		if got := defaultMaxConnections(); got > maxDefaultConnections {
			t.Fatalf("default %d connections with an open-file limit of %d", got, raised.Cur)
		}
	}
}

func TestAcceptPauseGrowsToOneSecond(t *testing.T) {
	var p time.Duration
	var got []time.Duration
	for range 10 {
		p = acceptPause(p)
		got = append(got, p)
	}
	if got[0] != 5*time.Millisecond || got[1] != 10*time.Millisecond || got[9] != time.Second {
		t.Fatalf("pauses %v: want 5ms doubling up to 1s", got)
	}
}

// Each topic-partition of a Fetch is answered once, whatever the request
// repeats; the first mention's fields win.
func TestFetchDuplicatePartitionsCollapse(t *testing.T) {
	req := kmsg.NewPtrFetchRequest()
	add := func(topic string, parts ...int32) {
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = topic
		for _, p := range parts {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset = p, int64(len(req.Topics))
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
	}
	add("a", 0, 0, 1, 0)
	add("b", 0)
	add("a", 1, 2)
	collapseDuplicatePartitions(req)
	var got []string
	for _, rt := range req.Topics {
		for _, rp := range rt.Partitions {
			got = append(got, rt.Topic+string(rune('0'+rp.Partition))+string(rune('0'+rp.FetchOffset)))
		}
	}
	want := []string{"a00", "a10", "a22", "b01"}
	if len(got) != len(want) {
		t.Fatalf("partitions %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("partitions %v, want %v (topic, partition, offset of the first mention)", got, want)
		}
	}
}

// A frame's memory is taken as its bytes arrive: a client that announces
// a large frame and sends one byte holds that byte of the budget, not the
// frame's size nor a read step ahead of it, and is cut off at the frame
// read timeout.
func TestFrameMemoryIsTakenAsBytesArrive(t *testing.T) {
	s := NewServer(Config{MaxRequestBytes: 8 << 20, MaxInflightBytes: 8 << 20, FrameReadTimeout: 300 * time.Millisecond},
		nil, nil, nil, zerolog.Nop())
	client, server := net.Pipe()
	defer client.Close()
	c := newConn(s, server)
	defer server.Close()
	go func() {
		_, _ = client.Write(append(binary.BigEndian.AppendUint32(nil, 8<<20), 1))
	}()
	done := make(chan error, 1)
	go func() {
		_, err := c.readFrame(context.Background(), bufio.NewReader(server))
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	if !s.inflight.TryAcquire(8<<20 - 1) {
		t.Fatal("a frame of 8 MiB with 1 byte in holds more of the request memory than that byte")
	}
	s.inflight.Release(8<<20 - 1)
	var ce *clientError
	select {
	case err := <-done:
		if !errors.As(err, &ce) || ce.kind != slowFrame {
			t.Fatalf("stalled frame ended with %v, want %q", err, slowFrame)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a stalled frame outlived the frame read timeout")
	}
	if !s.inflight.TryAcquire(8 << 20) {
		t.Fatal("the stalled frame's memory was not given back")
	}
}
