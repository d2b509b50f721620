package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// proc is a server the benchmark started: lakegw or the Kafka broker.
type proc struct {
	name string
	cmd  *exec.Cmd
	addr string
	mu   sync.Mutex
	logs bytes.Buffer
	done chan error
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

type lockedWriter struct{ p *proc }

func (w lockedWriter) Write(b []byte) (int, error) {
	w.p.mu.Lock()
	defer w.p.mu.Unlock()
	// Keep the tail only: a long run must not grow without bound.
	if w.p.logs.Len() > 4<<20 {
		tail := append([]byte(nil), w.p.logs.Bytes()[w.p.logs.Len()-(1<<20):]...)
		w.p.logs.Reset()
		w.p.logs.Write(tail)
	}
	return w.p.logs.Write(b)
}

func startProc(name, addr string, cmd *exec.Cmd, echo io.Writer) (*proc, error) {
	p := &proc{name: name, cmd: cmd, addr: addr, done: make(chan error, 1)}
	var out io.Writer = lockedWriter{p}
	if echo != nil {
		out = io.MultiWriter(out, echo)
	}
	cmd.Stdout, cmd.Stderr = out, out
	// Own process group, so that stopping the wrapper script stops java
	// too; and no broker or gateway outlives a killed benchmark.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	go func() { p.done <- cmd.Wait() }()
	return p, nil
}

// Logs returns the tail of what the process printed.
func (p *proc) Logs() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.logs.String()
	if len(s) > 8000 {
		s = "...\n" + s[len(s)-8000:]
	}
	return s
}

// waitReady waits until the server answers a franz-go ping.
func (p *proc) waitReady(ctx context.Context, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		cl, err := kgo.NewClient(kgo.SeedBrokers(p.addr))
		if err == nil {
			pctx, cancel := context.WithTimeout(ctx, time.Second)
			err = cl.Ping(pctx)
			cancel()
			cl.Close()
			if err == nil {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not come up on %s in %v: %v\n%s", p.name, p.addr, timeout, err, p.Logs())
		}
		select {
		case err := <-p.done:
			p.done <- err
			return fmt.Errorf("%s exited early: %v\n%s", p.name, err, p.Logs())
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// stop sends SIGTERM to the process group and waits, then kills.
func (p *proc) stop() {
	if p == nil || p.cmd.Process == nil {
		return
	}
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.done
	}
}

// pid is the process whose memory and CPU are measured. For Kafka the
// wrapper script execs java, so it is the same process.
func (p *proc) pid() int { return p.cmd.Process.Pid }

// memStat reads VmRSS and VmHWM (bytes) from /proc.
func memStat(pid int) (rss, hwm int64) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		v, _ := strconv.ParseInt(f[1], 10, 64)
		switch f[0] {
		case "VmRSS:":
			rss = v << 10
		case "VmHWM:":
			hwm = v << 10
		}
	}
	return rss, hwm
}

// resetHWM resets the process's peak RSS (VmHWM) to its current RSS.
func resetHWM(pid int) {
	_ = os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// cpuSeconds is the user+system CPU time the process has used.
func cpuSeconds(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	return (utime + stime) / 100 // USER_HZ
}

// rssSampler records the largest VmRSS seen while it runs.
type rssSampler struct {
	stop chan struct{}
	done chan int64
}

func sampleRSS(pid int) *rssSampler {
	s := &rssSampler{stop: make(chan struct{}), done: make(chan int64, 1)}
	go func() {
		var peak int64
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			if rss, _ := memStat(pid); rss > peak {
				peak = rss
			}
			select {
			case <-s.stop:
				s.done <- peak
				return
			case <-t.C:
			}
		}
	}()
	return s
}

func (s *rssSampler) Stop() int64 {
	close(s.stop)
	return <-s.done
}

// gatewayOpts are the lakegw serve flags the benchmark sets.
type gatewayOpts struct {
	bin        string
	dataDir    string
	cacheBytes int64
	// changesBytes is lakegw's other memory cache, of derived snapshots.
	changesBytes int64
	extra        []string
	env          []string // added to the environment
}

func startGateway(ctx context.Context, o gatewayOpts) (*proc, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	args := []string{"serve", "--data-dir", o.dataDir, "--listen", addr, "--log-format", "json", "--log-level", "warn",
		"--cache-bytes", strconv.FormatInt(o.cacheBytes, 10),
		"--changes-cache-bytes", strconv.FormatInt(o.changesBytes, 10)}
	args = append(args, o.extra...)
	cmd := exec.Command(o.bin, args...)
	cmd.Env = append(os.Environ(), o.env...)
	p, err := startProc("lakegw", addr, cmd, nil)
	if err != nil {
		return nil, err
	}
	if err := p.waitReady(ctx, 120*time.Second); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

func startKafka(ctx context.Context, script, dir string, echo io.Writer) (*proc, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	caddr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	_, port, _ := net.SplitHostPort(addr)
	_, cport, _ := net.SplitHostPort(caddr)
	p, err := startProc("kafka", addr, exec.Command("bash", script, "run", dir, port, cport), echo)
	if err != nil {
		return nil, err
	}
	return p, nil
}
