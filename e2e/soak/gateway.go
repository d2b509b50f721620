package main

import (
	"context"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// serveArgs are every `lakegw serve` flag the soak passes, in one place so
// that they can be adjusted as the product's flags change. With -maintain
// the background maintenance runs every maintainInterval; without it no
// maintenance flag is passed at all, so the harness runs on a binary that
// has none (the BEFORE figures).
func serveArgs(c config, dataDir, addr string) []string {
	args := []string{"serve", "--data-dir", dataDir, "--listen", addr,
		"--log-format", "json", "--log-level", "warn"}
	if c.maintain {
		args = append(args, "--maintain-interval", c.maintainInterval.String())
	}
	return append(args, c.serveFlags...)
}

// gateway is a running `lakegw serve`.
type gateway struct {
	cmd  *exec.Cmd
	addr string
	done chan error
	mu   sync.Mutex
	logs []byte // the tail of what it printed
}

func (g *gateway) Write(b []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.logs = append(g.logs, b...)
	if len(g.logs) > 1<<20 { // a long run must not grow it without bound
		g.logs = append([]byte(nil), g.logs[len(g.logs)-(64<<10):]...)
	}
	return len(b), nil
}

func (g *gateway) tail() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := string(g.logs)
	if len(s) > 4000 {
		s = "...\n" + s[len(s)-4000:]
	}
	return s
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// startGateway starts lakegw serve on dataDir and waits until it answers.
func startGateway(ctx context.Context, c config, dataDir string) (*gateway, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	g := &gateway{addr: addr, done: make(chan error, 1)}
	g.cmd = exec.Command(c.lakegwBin, serveArgs(c, dataDir, addr)...)
	g.cmd.Stdout, g.cmd.Stderr = g, g
	// No gateway outlives a killed soak.
	g.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := g.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start lakegw: %w", err)
	}
	go func() { g.done <- g.cmd.Wait() }()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
		if err == nil {
			pctx, cancel := context.WithTimeout(ctx, time.Second)
			err = cl.Ping(pctx)
			cancel()
			cl.Close()
			if err == nil {
				return g, nil
			}
		}
		select {
		case werr := <-g.done:
			g.done <- werr
			return nil, fmt.Errorf("lakegw serve exited early (%v):\n%s", werr, g.tail())
		case <-ctx.Done():
			g.stop()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			g.stop()
			return nil, fmt.Errorf("lakegw did not answer on %s: %v\n%s", addr, err, g.tail())
		}
	}
}

// stop sends SIGTERM and waits, then kills.
func (g *gateway) stop() {
	if g == nil || g.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-g.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case err := <-g.done:
		g.done <- err
	case <-time.After(20 * time.Second):
		_ = syscall.Kill(-g.cmd.Process.Pid, syscall.SIGKILL)
		g.done <- <-g.done
	}
}

func (g *gateway) pid() int { return g.cmd.Process.Pid }

// cpuSeconds is the user+system CPU time process pid has used.
func cpuSeconds(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(fields) < 13 {
		return 0
	}
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	return (utime + stime) / 100 // USER_HZ
}

// rssBytes is VmRSS of process pid.
func rssBytes(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	return 0
}

// dirBytes is the size of every regular file under dir. Files removed
// while it walks (maintenance, the writers' retries) are skipped.
func dirBytes(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if info, err := d.Info(); err == nil {
			n += info.Size()
		}
		return nil
	})
	return n
}

// newestMetadata is the size of the newest *.metadata.json in dir (the
// highest version prefix, as the SQL catalog names them).
func newestMetadata(dir string) int64 {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return 0
	}
	var best string
	var bestV int64 = -1
	for _, e := range ents {
		name := e.Name()
		if !strings.HasSuffix(name, ".metadata.json") {
			continue
		}
		v, err := strconv.ParseInt(strings.SplitN(name, "-", 2)[0], 10, 64)
		if err != nil {
			continue
		}
		if v > bestV {
			best, bestV = name, v
		}
	}
	if best == "" {
		return 0
	}
	info, err := os.Stat(filepath.Join(dir, best))
	if err != nil {
		return 0
	}
	return info.Size()
}
