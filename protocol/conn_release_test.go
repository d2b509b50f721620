package protocol

import (
	"bufio"
	"context"
	"encoding/binary"
	"io"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestPipelinedRequestsAreHandledOneAtATime: a client pipelines twenty
// 1 MiB requests of an API handled in its connection's turn and reads
// none of the answers. As on a Kafka broker, they are handled one at a
// time: the first answer blocks the writer on the socket, the second
// request is answered behind it, the third is read and waits for its
// turn, and nothing more is read. The two unanswered requests keep their
// bytes taken from the server-wide budget until their answers are
// written (Kafka's queued.max.request.bytes) and give them back once the
// client reads, which gets every answer, in order. (Metadata, ListGroups
// and the others of ownTurnKeys were handled up to 16 at once, all their
// answers held: the server read 8 and more of the twenty.) ApiVersions
// stands in for them here: its answer needs no topics or groups.
func TestPipelinedRequestsAreHandledOneAtATime(t *testing.T) {
	const (
		reqBytes = 1 << 20
		requests = 20
		budget   = 32 * reqBytes
	)
	s := NewServer(Config{MaxRequestBytes: 2 * reqBytes, MaxInflightBytes: budget, WriteTimeout: 30 * time.Second},
		nil, nil, nil, zerolog.Nop())
	s.ownTurn = map[int16]bool{kmsg.ApiVersions.Int16(): true}
	client, server := net.Pipe()
	defer client.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan struct{})
	go func() {
		defer close(served)
		newConn(s, server).serve(ctx)
	}()

	// net.Pipe has no buffer: a frame's write returns once the server has
	// read all of it, so consumed counts the requests the server read.
	var consumed atomic.Int32
	go func() {
		for i := range requests {
			req := kmsg.NewPtrApiVersionsRequest()
			req.Version = 3
			req.ClientSoftwareName = strings.Repeat("x", reqBytes-64)
			req.ClientSoftwareVersion = "1"
			body := frameBody(req, int32(i), "test")
			frame := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
			if _, err := client.Write(append(frame, body...)); err != nil {
				return
			}
			consumed.Add(1)
		}
	}()

	// Generous: under -race on a loaded 2-core machine the server took
	// over 5 s to read three such frames once.
	deadline := time.Now().Add(20 * time.Second)
	for consumed.Load() < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("the server read %d requests, want 3 (one answered and blocked on the socket, one answered behind it, one waiting)", consumed.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Give a server that reads ahead the time to show it.
	time.Sleep(300 * time.Millisecond)
	if n := consumed.Load(); n > 3 {
		t.Fatalf("the server read %d of %d pipelined requests while the client read no answer: want 3", n, requests)
	}
	if !s.inflight.TryAcquire(budget - 2*reqBytes) {
		t.Fatal("more than two requests hold the budget")
	}
	s.inflight.Release(budget - 2*reqBytes)
	if s.inflight.TryAcquire(budget - reqBytes) {
		s.inflight.Release(budget - reqBytes)
		t.Fatal("at most one request holds the budget: the unanswered ones gave it back before their answers were written")
	}

	// The client reads: every answer comes, in request order, and the
	// budget comes back whole.
	r := bufio.NewReader(client)
	for i := range requests {
		var head [8]byte
		if _, err := io.ReadFull(r, head[:]); err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		if corr := int32(binary.BigEndian.Uint32(head[4:])); corr != int32(i) {
			t.Fatalf("answer %d has correlation id %d", i, corr)
		}
		if _, err := io.CopyN(io.Discard, r, int64(binary.BigEndian.Uint32(head[:4]))-4); err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
	}
	for !s.inflight.TryAcquire(budget) {
		if time.Now().After(deadline.Add(10 * time.Second)) {
			t.Fatal("the budget did not come back once the answers were read")
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.inflight.Release(budget)
	cancel()
	client.Close()
	<-served
}

// The APIs whose answers grow with what the gateway holds rather than with
// the request are handled in their connection's turn; the others, whose
// answers the request's budgeted bytes bound, are not held back.
func TestOwnTurnKeysAreTheUnboundedAnswers(t *testing.T) {
	turn := ownTurnKeys()
	for _, k := range []kmsg.Key{kmsg.Fetch, kmsg.Metadata, kmsg.OffsetFetch, kmsg.DescribeGroups, kmsg.ListGroups} {
		if !turn[k.Int16()] {
			t.Errorf("%s is not handled in its connection's turn", k.Name())
		}
	}
	for _, k := range []kmsg.Key{kmsg.JoinGroup, kmsg.Heartbeat, kmsg.OffsetCommit, kmsg.ApiVersions, kmsg.SyncGroup} {
		if turn[k.Int16()] {
			t.Errorf("%s waits for its connection's turn: a pipelining client's requests of it queue behind one another", k.Name())
		}
	}
}
