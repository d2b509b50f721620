package e2e

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lakegw/lakegw/e2e/internal/procs"
)

// hnetHealthyWithin is how fast a healthy client must be answered while an
// attack runs (issue #12: "answers a healthy client within 1 s").
const hnetHealthyWithin = time.Second

// hnetRequireHealthy requires a fresh client, dialling from localIP (empty:
// any), to get a Metadata answer within hnetHealthyWithin.
func hnetRequireHealthy(t *testing.T, g *gateway, localIP, during string) {
	t.Helper()
	if err := g.cmd.Process.Signal(syscall.Signal(0)); err != nil {
		t.Fatalf("%s: the gateway is gone: %v\nlogs:\n%s", during, err, tailLines(g.Logs(), 40))
	}
	opts := []kgo.Opt{kgo.SeedBrokers(g.addr)}
	if localIP != "" {
		d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(localIP)}}
		opts = append(opts, kgo.Dialer(d.DialContext))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), hnetHealthyWithin)
	defer cancel()
	start := time.Now()
	req := kmsg.NewPtrMetadataRequest()
	if _, err := req.RequestWith(ctx, cl); err != nil {
		t.Fatalf("%s: a healthy client's Metadata was not answered within %v (after %v): %v", during, hnetHealthyWithin, time.Since(start), err)
	}
	t.Logf("%s: healthy Metadata answered in %v", during, time.Since(start))
}

// hnetDial opens a raw connection from localIP (empty: any).
func hnetDial(addr, localIP string) (net.Conn, error) {
	d := net.Dialer{Timeout: 5 * time.Second}
	if localIP != "" {
		d.LocalAddr = &net.TCPAddr{IP: net.ParseIP(localIP)}
	}
	return d.Dial("tcp", addr)
}

// hnetClosedWithin reports whether the gateway closed nc within d (a read
// returns EOF or a reset rather than timing out).
func hnetClosedWithin(nc net.Conn, d time.Duration) bool {
	_ = nc.SetReadDeadline(time.Now().Add(d))
	buf := make([]byte, 4096)
	for {
		_, err := nc.Read(buf)
		if err == nil {
			continue
		}
		var ne net.Error
		return !(errors.As(err, &ne) && ne.Timeout())
	}
}

// hnetCountClosed counts the connections the gateway closed, waiting up
// to d for each.
func hnetCountClosed(conns []net.Conn, d time.Duration) int {
	closed := 0
	for _, nc := range conns {
		if hnetClosedWithin(nc, d) {
			closed++
		}
	}
	return closed
}

// hnetFramed frames req (request header v1, or v2 when flexible) with
// correlation id corr.
func hnetFramed(req kmsg.Request, corr int32) []byte {
	b := make([]byte, 4, 128)
	b = binary.BigEndian.AppendUint16(b, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.GetVersion()))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = binary.BigEndian.AppendUint16(b, uint16(len("hostile")))
	b = append(b, "hostile"...)
	if req.IsFlexible() {
		b = append(b, 0)
	}
	b = req.AppendTo(b)
	binary.BigEndian.PutUint32(b, uint32(len(b)-4))
	return b
}

// hnetFetch is a Fetch v11 (not flexible: response header v0) of partition
// 0 of topic from offset 0, naming it copies times, with a 50 MiB limit
// as kgo's default.
func hnetFetch(copies int) *kmsg.FetchRequest {
	req := kmsg.NewPtrFetchRequest()
	req.Version = 11
	req.ReplicaID = -1
	req.MaxBytes = 50 << 20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	for range copies {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.PartitionMaxBytes = 50 << 20
		rp.CurrentLeaderEpoch = -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	return req
}

// TestHostileSlowFramesDoNotStarveHealthyClients reproduces row 2 of issue
// #12: connections that each announce a frame of --max-request-bytes and
// send 1 byte of it must neither take the server-wide request memory (it is
// taken for the bytes that arrived) nor hold their connection past the
// frame read timeout, and a healthy client is answered within 1 s
// meanwhile, with RSS bounded. 1,100 of them: eight took the 64 MiB budget
// when a frame's size was taken at once, 1,024 when it was taken 64 KiB
// ahead of the bytes.
func TestHostileSlowFramesDoNotStarveHealthyClients(t *testing.T) {
	const conns = 1100
	dir := t.TempDir()
	setupTable(t, dir)
	g := startGatewayForRSS(t, dir, "", "--frame-read-timeout", "5s")
	rssBefore, _ := procs.MemStat(g.cmd.Process.Pid)
	procs.ResetHWM(g.cmd.Process.Pid)

	var stalled []net.Conn
	defer func() {
		for _, nc := range stalled {
			nc.Close()
		}
	}()
	for range conns {
		nc, err := hnetDial(g.addr, "")
		if err != nil {
			t.Fatal(err)
		}
		stalled = append(stalled, nc)
		if _, err := nc.Write(append(binary.BigEndian.AppendUint32(nil, 8<<20), 0)); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(500 * time.Millisecond) // the gateway has read the size prefixes
	hnetRequireHealthy(t, g, "", fmt.Sprintf("%d connections stalled in 8 MiB frames", conns))
	_, peak := procs.MemStat(g.cmd.Process.Pid)
	// Each connection's read and write buffers (64 KiB each) and
	// goroutines, nothing of the frames it announced.
	t.Logf("RSS %d MiB before, peak %d MiB with %d stalled frames", rssBefore>>20, peak>>20, conns)
	if bound := rssBefore + conns*64<<10; peak > bound {
		t.Fatalf("peak RSS %d MiB with %d connections stalled in 8 MiB frames, want under %d MiB (before + 64 KiB a connection)",
			peak>>20, conns, bound>>20)
	}

	// A started frame must arrive within the frame read timeout: the
	// stalled connections are closed soon after it.
	for i, nc := range stalled {
		if !hnetClosedWithin(nc, 8*time.Second) {
			t.Fatalf("stalled connection %d still open 8 s after its frame started (frame read timeout 5 s)", i)
		}
	}
	hnetRequireHealthy(t, g, "", "after the stalled connections were closed")
}

// TestHostileConnectionFloodIsBounded reproduces row 3 of issue #12 (21,000
// connections ran the gateway out of file descriptors and `accept4: too
// many open files` ended Serve): over-limit connections are closed at once
// and counted, idle ones are closed after --connections-max-idle, and
// accept errors back off and retry instead of ending the process.
func TestHostileConnectionFloodIsBounded(t *testing.T) {
	dir := t.TempDir()
	setupTable(t, dir)

	t.Run("max connections and idle", func(t *testing.T) {
		g := startGateway(t, dir, "", "--max-connections", "40", "--connections-max-idle", "3s")
		conns := hnetOpen(t, g.addr, "127.0.0.1", 120)
		if refused := hnetCountClosed(conns, 50*time.Millisecond); refused < 120-40 {
			t.Fatalf("%d of 120 connections closed at once, want at least %d over --max-connections 40", refused, 120-40)
		}
		if !strings.Contains(g.Logs(), "connection limit reached") || !strings.Contains(g.Logs(), `"total":`) {
			t.Fatalf("no log line counts the refused connections\nlogs:\n%s", tailLines(g.Logs(), 20))
		}
		// The admitted ones send nothing: they are idle and closed, which
		// makes room for a healthy client again.
		time.Sleep(4 * time.Second)
		if closed := hnetCountClosed(conns, 50*time.Millisecond); closed != 120 {
			t.Fatalf("%d of 120 connections closed 4 s into a 3 s idle limit, want all", closed)
		}
		hnetRequireHealthy(t, g, "", "after the idle flood")
	})

	t.Run("many open connections", func(t *testing.T) {
		// Under the default limits (the open-file limit less its reserve),
		// 3,000 connections that send nothing cost each a connection's
		// buffers and goroutines, and a healthy client is still answered.
		const n = 3000
		g := startGatewayForRSS(t, dir, "")
		pid := g.cmd.Process.Pid
		rssBefore, _ := procs.MemStat(pid)
		procs.ResetHWM(pid)
		hnetOpen(t, g.addr, "127.0.0.1", n)
		time.Sleep(500 * time.Millisecond)
		hnetRequireHealthy(t, g, "", fmt.Sprintf("%d open connections", n))
		_, peak := procs.MemStat(pid)
		t.Logf("RSS %d MiB before, peak %d MiB with %d open connections", rssBefore>>20, peak>>20, n)
		if bound := rssBefore + n*64<<10; peak > bound {
			t.Fatalf("peak RSS %d MiB with %d open connections, want under %d MiB (before + 64 KiB a connection)", peak>>20, n, bound>>20)
		}
	})

	t.Run("max connections per ip", func(t *testing.T) {
		g := startGateway(t, dir, "", "--max-connections-per-ip", "20")
		conns := hnetOpen(t, g.addr, "127.0.0.1", 60)
		time.Sleep(200 * time.Millisecond)
		// Another client address is not held back by the flooding one.
		hnetRequireHealthy(t, g, "127.0.0.2", "60 connections from 127.0.0.1 (limit 20 per ip)")
		if refused := hnetCountClosed(conns, 50*time.Millisecond); refused < 60-20 {
			t.Fatalf("%d of 60 connections from one ip closed, want at least %d over --max-connections-per-ip 20", refused, 60-20)
		}
	})

	t.Run("out of file descriptors", func(t *testing.T) {
		g := startGateway(t, dir, "")
		// Lower the running gateway's open-file limit below the flood
		// (the test process keeps its own): accept4 fails with EMFILE.
		// The gateway runs as the test's own user, so lowering its limit
		// is always allowed: a failure here is the test's, not a skip.
		if err := hnetLimitOpenFiles(g.cmd.Process.Pid, 160); err != nil {
			t.Fatalf("cannot lower the gateway's open-file limit: %v", err)
		}
		conns := hnetOpen(t, g.addr, "127.0.0.1", 400)
		time.Sleep(time.Second) // the gateway hits EMFILE and backs off
		if err := g.cmd.Process.Signal(syscall.Signal(0)); err != nil {
			t.Fatalf("the gateway exited under the flood\nlogs:\n%s", tailLines(g.Logs(), 20))
		}
		for _, nc := range conns {
			nc.Close()
		}
		time.Sleep(500 * time.Millisecond)
		hnetRequireHealthy(t, g, "", "after a flood past the open-file limit")
		if !strings.Contains(g.Logs(), "too many open files") {
			t.Fatalf("the flood did not reach the open-file limit (nothing logged about it)\nlogs:\n%s", tailLines(g.Logs(), 20))
		}
	})
}

// hnetOpen opens n raw connections from localIP; they are closed when the
// test ends.
func hnetOpen(t *testing.T, addr, localIP string, n int) []net.Conn {
	t.Helper()
	var conns []net.Conn
	t.Cleanup(func() {
		for _, nc := range conns {
			nc.Close()
		}
	})
	for i := range n {
		nc, err := hnetDial(addr, localIP)
		if err != nil {
			t.Fatalf("connection %d: %v", i, err)
		}
		conns = append(conns, nc)
	}
	return conns
}

// hnetLimitOpenFiles sets the open-file limit of process pid with prlimit(1).
func hnetLimitOpenFiles(pid, n int) error {
	var rl syscall.Rlimit
	rl.Cur, rl.Max = uint64(n), uint64(n)
	// prlimit64 on another process: syscall has no wrapper.
	_, _, errno := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), uintptr(syscall.RLIMIT_NOFILE),
		uintptr(unsafe.Pointer(&rl)), 0, 0, 0)
	if errno != 0 {
		return fmt.Errorf("prlimit %d: %w", pid, errno)
	}
	return nil
}

// TestHostilePipelinedFetchesKeepMemoryBounded reproduces row 4 of issue
// #12: 4 connections each pipelining 17 Fetches of 50 MiB without reading
// an answer took RSS from 62 MiB to 3.3 GB, and one Fetch naming partition
// 0 10,000 times was answered with 57.7 MB. A connection now handles its
// next Fetch only once the previous Fetch's answer is written, request
// memory is held until then, and duplicate partitions are answered once.
func TestHostilePipelinedFetchesKeepMemoryBounded(t *testing.T) {
	dir := t.TempDir()
	w := newTableWriter(t, dir, "e2e", "events")
	w.appendRows(60000)
	g := startGatewayForRSS(t, dir, "")
	pid := g.cmd.Process.Pid

	// One honest read warms the caches and gives the size of the answer.
	// A cold gateway may answer the first read with the batches encoded
	// so far, so the size is read again once they all are.
	one := hnetFetchResponseSize(t, g.addr, hnetFetch(1))
	one = max(one, hnetFetchResponseSize(t, g.addr, hnetFetch(1)))
	t.Logf("one partition's answer: %d bytes", one)

	// Duplicates collapse: naming partition 0 10,000 times is one answer.
	dup := hnetFetchResponseSize(t, g.addr, hnetFetch(10000))
	t.Logf("partition 0 named 10,000 times: %d bytes", dup)
	one = max(one, hnetFetchResponseSize(t, g.addr, hnetFetch(1)))
	if dup > 2*one {
		t.Fatalf("a Fetch naming partition 0 10,000 times was answered with %d bytes, one partition is %d", dup, one)
	}

	rssBefore, _ := procs.MemStat(pid)
	procs.ResetHWM(pid)
	frames := make([]byte, 0, 17*200)
	for i := range 17 {
		frames = append(frames, hnetFramed(hnetFetch(1), int32(i))...)
	}
	var conns []net.Conn
	defer func() {
		for _, nc := range conns {
			nc.Close()
		}
	}()
	for range 4 {
		nc, err := hnetDial(g.addr, "")
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, nc)
		if _, err := nc.Write(frames); err != nil {
			t.Fatal(err)
		}
	}
	// Let the handlers run; nobody reads the answers.
	var peak int64
	for range 8 {
		time.Sleep(500 * time.Millisecond)
		_, hwm := procs.MemStat(pid)
		peak = max(peak, hwm)
	}
	hnetRequireHealthy(t, g, "", "4 connections x 17 unread pipelined Fetches")
	_, hwm := procs.MemStat(pid)
	peak = max(peak, hwm)
	t.Logf("RSS %d MiB before; peak %d MiB with 4 x 17 unread Fetches of %d bytes each", rssBefore>>20, peak>>20, one)
	if bound := rssBefore + 8*int64(one) + 64<<20; peak > bound {
		t.Fatalf("peak RSS %d MiB with 4 connections x 17 unread Fetches, want under %d MiB (RSS before + 8 answers + 64 MiB)",
			peak>>20, bound>>20)
	}
}

// hnetFetchResponseSize sends req on a raw connection and returns the size
// of its answer, checking it answers each topic-partition once.
func hnetFetchResponseSize(t *testing.T, addr string, req *kmsg.FetchRequest) int {
	t.Helper()
	nc, err := hnetDial(addr, "")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := nc.Write(hnetFramed(req, 7)); err != nil {
		t.Fatal(err)
	}
	_ = nc.SetReadDeadline(time.Now().Add(30 * time.Second))
	var size [4]byte
	if _, err := io.ReadFull(nc, size[:]); err != nil {
		t.Fatalf("read Fetch answer: %v", err)
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(nc, body); err != nil {
		t.Fatalf("read Fetch answer: %v", err)
	}
	resp := req.ResponseKind().(*kmsg.FetchResponse)
	resp.Version = req.Version
	if err := resp.ReadFrom(body[4:]); err != nil {
		t.Fatalf("decode Fetch answer: %v", err)
	}
	seen := map[string]bool{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			k := fmt.Sprintf("%s/%d", rt.Topic, rp.Partition)
			if seen[k] {
				t.Errorf("Fetch answer names %s more than once", k)
			}
			seen[k] = true
			if rp.ErrorCode != 0 || len(rp.RecordBatches) == 0 {
				t.Fatalf("Fetch answer for %s: error %d, %d bytes", k, rp.ErrorCode, len(rp.RecordBatches))
			}
		}
	}
	return len(body) + 4
}
