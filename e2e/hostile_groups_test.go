package e2e

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lakegw/lakegw/e2e/internal/procs"
)

// The bounds the hostile group tests hold the gateway to. They follow from
// the coordinator's defaults (see the limits table in the README):
// ids of at most 249 bytes, 10,000 groups with committed offsets, 4 KiB of
// metadata per offset, 100 pending member ids per client host.
const (
	// hgRSSGrowth is how much the resident set may grow over its idle
	// figure during and after a flood: request buffers come and go, what
	// the coordinator keeps is a few MiB.
	hgRSSGrowth = 160 << 20
	// hgStateBytes bounds state.db (with its WAL) after the commit flood:
	// 10,000 groups x (249 B id + 4 KiB metadata + row overhead) is about
	// 45 MB.
	hgStateBytes = 64 << 20
	// hgRestartRSS bounds the resident set of a gateway that loaded those
	// offsets at start.
	hgRestartRSS = 256 << 20
	// hgListGroupsBytes bounds a ListGroups answer: 10,000 short names.
	hgListGroupsBytes = 4 << 20
)

// TestHostileGroupsJoinFloodStaysBounded reproduces row 5 of issue 12:
// 20,000 JoinGroups with 16 KB client ids, half of them with 16 KB group
// ids, half with short ones (each a new group and a pending member id
// that lives as long as the 30-minute session it asks for). Before: RSS
// 71 -> 732 MiB, still 732 MiB a minute after disconnecting. Now the long
// group ids are INVALID_GROUP_ID, a client host holds at most 100 pending
// member ids (the rest COORDINATOR_NOT_AVAILABLE, retriable), pending ids
// lapse within 10 s, and the groups they made are forgotten: RSS stays
// within hgRSSGrowth of idle while a healthy client is answered in 1 s.
func TestHostileGroupsJoinFloodStaysBounded(t *testing.T) {
	g := startGatewayForRSS(t, t.TempDir(), "")
	pid := g.cmd.Process.Pid
	idle, _ := procs.MemStat(pid)
	procs.ResetHWM(pid)
	probe := hgStartProbe(t, g.addr)

	longID := strings.Repeat("g", 16<<10)
	codes := hgFlood(t, g.addr, 4, 20000, strings.Repeat("c", 16<<10), func(i int) kmsg.Request {
		req := kmsg.NewPtrJoinGroupRequest()
		req.Version = 5
		req.Group = fmt.Sprintf("hg-%d", i)
		if i%2 == 0 {
			req.Group = fmt.Sprintf("%s-%d", longID, i)
		}
		req.SessionTimeoutMillis = 30 * 60 * 1000
		req.RebalanceTimeoutMillis = 30 * 60 * 1000
		req.ProtocolType = "consumer"
		p := kmsg.NewJoinGroupRequestProtocol()
		p.Name, p.Metadata = "range", []byte{0, 1}
		req.Protocols = append(req.Protocols, p)
		return req
	}, func(version int16, body []byte) (int16, error) {
		resp := kmsg.NewPtrJoinGroupResponse()
		resp.Version = version
		return resp.ErrorCode, resp.ReadFrom(body)
	})
	_, peak := procs.MemStat(pid)
	probe.stop()

	listed := hgListGroups(t, g.addr)
	deadline := time.Now().Add(20 * time.Second)
	for len(listed) > 0 && time.Now().Before(deadline) {
		time.Sleep(250 * time.Millisecond)
		listed = hgListGroups(t, g.addr)
	}
	after, _ := procs.MemStat(pid)
	t.Logf("join flood: answers %v; RSS idle %d MiB, peak %d MiB, after %d MiB; groups left %d; slowest healthy Metadata %v",
		hgCodeNames(codes), idle>>20, peak>>20, after>>20, len(listed), probe.slowest())

	if n := codes[kerr.InvalidGroupID.Code]; n != 10000 {
		t.Errorf("%d JoinGroups with 16 KB group ids answered INVALID_GROUP_ID, want 10000", n)
	}
	if n := codes[kerr.MemberIDRequired.Code]; n > 100 {
		t.Errorf("%d pending member ids handed to one client host, want at most 100", n)
	}
	if len(listed) > 0 {
		t.Errorf("%d groups of a disconnected client still listed 20 s later", len(listed))
	}
	if peak-idle > hgRSSGrowth {
		t.Errorf("RSS peaked at %d MiB, %d MiB over idle: want at most %d MiB over", peak>>20, (peak-idle)>>20, hgRSSGrowth>>20)
	}
	probe.check(t)

	// The coordinator still takes a new member once the pending ids lapsed.
	resp := hgJoin(t, g.addr, "healthy", "")
	if resp.ErrorCode == kerr.MemberIDRequired.Code {
		resp = hgJoin(t, g.addr, "healthy", resp.MemberID)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil || resp.LeaderID != resp.MemberID {
		t.Errorf("a healthy member's join after the flood: %v, leader %q member %q", err, resp.LeaderID, resp.MemberID)
	}
}

// TestHostileGroupsCommitFloodStaysBounded reproduces row 6 of issue 12:
// 20,000 simple OffsetCommits (assign() style, generation -1) with 4 KB
// metadata, half with 8 KB group ids, half with short ones, each a new
// group. Before: state.db 44 KB -> 402 MB, RSS after restart 349 MiB,
// ListGroups answer 480 MB in 9.3 s. Now the long ids are INVALID_GROUP_ID
// and at most 10,000 groups hold offsets (a new one past that gets
// COORDINATOR_NOT_AVAILABLE), so state.db stays under hgStateBytes, a
// restart under hgRestartRSS and ListGroups under hgListGroupsBytes; a
// group that committed before the flood keeps working.
func TestHostileGroupsCommitFloodStaysBounded(t *testing.T) {
	dir := t.TempDir()
	setupTable(t, dir)
	g := startGatewayForRSS(t, dir, "")
	if code := hgCommit(t, g.addr, "healthy", 5); code != 0 {
		t.Fatalf("healthy commit before the flood: %v", kerr.ErrorForCode(code))
	}
	before := hgStateSize(t, dir)
	pid := g.cmd.Process.Pid
	idle, _ := procs.MemStat(pid)
	procs.ResetHWM(pid)
	probe := hgStartProbe(t, g.addr)

	longID := strings.Repeat("g", 8<<10)
	metadata := strings.Repeat("m", 4096)
	codes := hgFlood(t, g.addr, 4, 20000, "hostile", func(i int) kmsg.Request {
		group := fmt.Sprintf("hc-%d", i)
		if i%2 == 0 {
			group = fmt.Sprintf("%s-%d", longID, i)
		}
		return hgCommitReq(group, 1, metadata)
	}, func(version int16, body []byte) (int16, error) {
		resp := kmsg.NewPtrOffsetCommitResponse()
		resp.Version = version
		if err := resp.ReadFrom(body); err != nil {
			return 0, err
		}
		if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
			return 0, fmt.Errorf("answer for %d topics, want 1", len(resp.Topics))
		}
		return resp.Topics[0].Partitions[0].ErrorCode, nil
	})
	_, peak := procs.MemStat(pid)
	probe.stop()
	if code := hgCommit(t, g.addr, "healthy", 7); code != 0 {
		t.Errorf("healthy commit after the flood: %v", kerr.ErrorForCode(code))
	}

	start := time.Now()
	raw := hgListGroupsRaw(t, g.addr)
	took := time.Since(start)
	stateBytes := hgStateSize(t, dir)

	g.stop()
	g2 := startGatewayForRSS(t, dir, "")
	restartRSS, _ := procs.MemStat(g2.cmd.Process.Pid)
	t.Logf("commit flood: answers %v; state.db %d KiB -> %d KiB; RSS idle %d MiB, peak %d MiB, after restart %d MiB; ListGroups %d KiB in %v; slowest healthy Metadata %v",
		hgCodeNames(codes), before>>10, stateBytes>>10, idle>>20, peak>>20, restartRSS>>20, len(raw)>>10, took, probe.slowest())

	if n := codes[kerr.InvalidGroupID.Code]; n != 10000 {
		t.Errorf("%d OffsetCommits with 8 KB group ids answered INVALID_GROUP_ID, want 10000", n)
	}
	if stateBytes > hgStateBytes {
		t.Errorf("state.db grew to %d MiB, want at most %d MiB", stateBytes>>20, hgStateBytes>>20)
	}
	if restartRSS > hgRestartRSS {
		t.Errorf("RSS after restart %d MiB, want at most %d MiB", restartRSS>>20, hgRestartRSS>>20)
	}
	if len(raw) > hgListGroupsBytes || took > time.Second {
		t.Errorf("ListGroups answered %d KiB in %v, want at most %d KiB within 1 s", len(raw)>>10, took, hgListGroupsBytes>>10)
	}
	if peak-idle > hgRSSGrowth {
		t.Errorf("RSS peaked at %d MiB, %d MiB over idle: want at most %d MiB over", peak>>20, (peak-idle)>>20, hgRSSGrowth>>20)
	}
	probe.check(t)
	if off := hgFetchCommitted(t, g2.addr, "healthy"); off != 7 {
		t.Errorf("healthy group's committed offset after restart %d, want 7", off)
	}
}

// hgFlood sends n requests made by build over conns connections at once,
// pipelined (each connection writes without waiting for answers while
// another goroutine reads them), all with clientID in the header, and
// counts the answers by the error code decode finds in them.
func hgFlood(t *testing.T, addr string, conns, n int, clientID string, build func(i int) kmsg.Request,
	decode func(version int16, body []byte) (int16, error)) map[int16]int {
	t.Helper()
	var mu sync.Mutex
	codes := make(map[int16]int)
	var wg sync.WaitGroup
	errs := make(chan error, 2*conns)
	for c := 0; c < conns; c++ {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		if err := nc.SetDeadline(time.Now().Add(50 * time.Second)); err != nil {
			t.Fatal(err)
		}
		mine := make([]int, 0, n/conns+1)
		for i := c; i < n; i += conns {
			mine = append(mine, i)
		}
		versions := make(chan int16, len(mine))
		wg.Add(2)
		go func() {
			defer wg.Done()
			f := kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID))
			w := bufio.NewWriterSize(nc, 1<<20)
			var buf []byte
			for corr, i := range mine {
				req := build(i)
				versions <- req.GetVersion()
				buf = f.AppendRequest(buf[:0], req, int32(corr))
				if _, err := w.Write(buf); err != nil {
					errs <- fmt.Errorf("write request %d: %w", i, err)
					return
				}
			}
			if err := w.Flush(); err != nil {
				errs <- fmt.Errorf("flush: %w", err)
			}
		}()
		go func() {
			defer wg.Done()
			r := bufio.NewReaderSize(nc, 1<<20)
			for range mine {
				body, err := hgReadFrame(r)
				if err != nil {
					errs <- fmt.Errorf("read answer: %w", err)
					return
				}
				code, err := decode(<-versions, body[4:]) // past the correlation id
				if err != nil {
					errs <- fmt.Errorf("decode answer: %w", err)
					return
				}
				mu.Lock()
				codes[code]++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	return codes
}

func hgReadFrame(r io.Reader) ([]byte, error) {
	var size [4]byte
	if _, err := io.ReadFull(r, size[:]); err != nil {
		return nil, err
	}
	body := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(r, body); err != nil {
		return nil, err
	}
	return body, nil
}

// hgProbe is a healthy client asking for Metadata every 100 ms while a
// flood runs; the issue wants each answered within 1 s.
type hgProbe struct {
	quit chan struct{}
	done chan struct{}
	mu   sync.Mutex
	max  time.Duration
	err  error
}

func hgStartProbe(t *testing.T, addr string) *hgProbe {
	cl := mustClient(t, addr)
	p := &hgProbe{quit: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(p.done)
		for {
			select {
			case <-p.quit:
				return
			case <-time.After(100 * time.Millisecond):
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			start := time.Now()
			_, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, cl)
			took := time.Since(start)
			cancel()
			p.mu.Lock()
			p.max = max(p.max, took)
			if err != nil && p.err == nil {
				p.err = err
			}
			p.mu.Unlock()
		}
	}()
	return p
}

func (p *hgProbe) stop() { close(p.quit); <-p.done }

func (p *hgProbe) slowest() time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.max
}

func (p *hgProbe) check(t *testing.T) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.err != nil {
		t.Errorf("healthy Metadata failed during the flood: %v", p.err)
	}
	if p.max > time.Second {
		t.Errorf("healthy Metadata took %v during the flood, want at most 1 s", p.max)
	}
}

func hgCodeNames(codes map[int16]int) map[string]int {
	out := make(map[string]int, len(codes))
	for code, n := range codes {
		name := "OK"
		if err := kerr.ErrorForCode(code); err != nil {
			name = err.Error()
			if i := strings.IndexByte(name, ':'); i > 0 {
				name = name[:i]
			}
		}
		out[name] += n
	}
	return out
}

// hgStateSize is the size of the state store with its write-ahead log.
func hgStateSize(t *testing.T, dataDir string) int64 {
	t.Helper()
	var total int64
	for _, name := range []string{"state.db", "state.db-wal"} {
		fi, err := os.Stat(filepath.Join(dataDir, name))
		if err != nil {
			if os.IsNotExist(err) {
				continue
			}
			t.Fatal(err)
		}
		total += fi.Size()
	}
	return total
}

func hgCommitReq(group string, offset int64, metadata string) *kmsg.OffsetCommitRequest {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Version = 7
	req.Group = group
	req.Generation = -1
	rt := kmsg.NewOffsetCommitRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetCommitRequestTopicPartition()
	rp.Offset = offset
	rp.LeaderEpoch = -1
	rp.Metadata = kmsg.StringPtr(metadata)
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

func hgCommit(t *testing.T, addr, group string, offset int64) int16 {
	t.Helper()
	// Pinned to the version the request is built for: the client would
	// send the newest both speak, which names topics by id (v10).
	resp, err := hgCommitReq(group, offset, "").RequestWith(context.Background(), pinned(t, addr, kmsg.OffsetCommit.Int16(), 7))
	if err != nil {
		t.Fatal(err)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}

func hgFetchCommitted(t *testing.T, addr, group string) int64 {
	t.Helper()
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Version = 7
	req.Group = group
	rt := kmsg.NewOffsetFetchRequestTopic()
	rt.Topic = topic
	rt.Partitions = []int32{0}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(context.Background(), pinned(t, addr, kmsg.OffsetFetch.Int16(), 7))
	if err != nil {
		t.Fatal(err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		t.Fatalf("offset fetch of %s: %v", group, err)
	}
	return resp.Topics[0].Partitions[0].Offset
}

func hgJoin(t *testing.T, addr, group, memberID string) *kmsg.JoinGroupResponse {
	t.Helper()
	req := kmsg.NewPtrJoinGroupRequest()
	req.Version = 5
	req.Group, req.MemberID = group, memberID
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 10000, 10000
	req.ProtocolType = "consumer"
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name = "range"
	req.Protocols = append(req.Protocols, p)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, mustClient(t, addr))
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// hgListGroups names every group the gateway lists.
func hgListGroups(t *testing.T, addr string) []string {
	t.Helper()
	resp := kmsg.NewPtrListGroupsResponse()
	resp.Version = 2
	if err := resp.ReadFrom(hgListGroupsRaw(t, addr)); err != nil {
		t.Fatal(err)
	}
	names := make([]string, 0, len(resp.Groups))
	for _, g := range resp.Groups {
		names = append(names, g.Group)
	}
	return names
}

// hgListGroupsRaw is the body of a ListGroups v2 answer, as it came over
// the wire (after the correlation id): its size is what a flood of groups
// costs every caller.
func hgListGroupsRaw(t *testing.T, addr string) []byte {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if err := nc.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrListGroupsRequest()
	req.Version = 2
	if _, err := nc.Write(kmsg.NewRequestFormatter().AppendRequest(nil, req, 1)); err != nil {
		t.Fatal(err)
	}
	body, err := hgReadFrame(nc)
	if err != nil {
		t.Fatal(err)
	}
	return body[4:]
}
