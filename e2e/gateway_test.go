package e2e

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// lakegwBin is the binary under test, built once by TestMain.
var lakegwBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "lakegw-e2e-bin")
	if err != nil {
		fmt.Fprintln(os.Stderr, "temp dir:", err)
		os.Exit(1)
	}
	lakegwBin = filepath.Join(dir, "lakegw")
	build := exec.Command("go", "build", "-o", lakegwBin, "../cmd/lakegw")
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build lakegw:", err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// gateway is a running lakegw process.
type gateway struct {
	t       *testing.T
	cmd     *exec.Cmd
	addr    string
	dataDir string
	mu      sync.Mutex
	logs    bytes.Buffer
	done    chan error
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startGateway starts `lakegw serve` on dataDir and waits until it answers
// Metadata.
func startGateway(t *testing.T, dataDir, addr string, extra ...string) *gateway {
	t.Helper()
	return startGatewayWithEnv(t, nil, dataDir, addr, extra...)
}

// startGatewayForRSS starts a gateway whose resident set follows what it
// keeps: by default the collector lets the heap grow to the memory limit
// before it runs (see cmd/lakegw/memory.go), so a flood of garbage would
// show as RSS up to that limit whatever the gateway retains. GOGC=100, an
// operator's override, makes it collect whenever the heap doubles, and the
// hostile tests' RSS bounds then measure retention, which is their point.
func startGatewayForRSS(t *testing.T, dataDir, addr string, extra ...string) *gateway {
	t.Helper()
	return startGatewayWithEnv(t, []string{"GOGC=100"}, dataDir, addr, extra...)
}

// startGatewayWithEnv is startGateway with env added to the gateway's
// environment.
func startGatewayWithEnv(t *testing.T, env []string, dataDir, addr string, extra ...string) *gateway {
	t.Helper()
	if addr == "" {
		addr = freeAddr(t)
	}
	args := append([]string{"serve", "--data-dir", dataDir, "--listen", addr, "--log-format", "json", "--log-level", "debug",
		"--poll-interval", "100ms", "--list-interval", "200ms"}, extra...)
	cmd := exec.Command(lakegwBin, args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	g := &gateway{t: t, cmd: cmd, addr: addr, dataDir: dataDir, done: make(chan error, 1)}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start lakegw: %v", err)
	}
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			g.mu.Lock()
			g.logs.Write(sc.Bytes())
			g.logs.WriteByte('\n')
			g.mu.Unlock()
		}
		g.done <- cmd.Wait()
	}()
	t.Cleanup(func() { g.stop() })
	deadline := time.Now().Add(30 * time.Second)
	for {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			err = cl.Ping(ctx)
			cancel()
			cl.Close()
			if err == nil {
				return g
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("lakegw did not come up on %s: %v\nlogs:\n%s", addr, err, g.Logs())
		}
		select {
		case err := <-g.done:
			t.Fatalf("lakegw exited early: %v\nlogs:\n%s", err, g.Logs())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Logs returns what the gateway logged so far.
func (g *gateway) Logs() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.logs.String()
}

// stop sends SIGTERM and requires a clean exit within 10 s.
func (g *gateway) stop() {
	if g.cmd.ProcessState != nil {
		return
	}
	if err := g.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return
	}
	select {
	case err := <-g.done:
		if err != nil {
			g.t.Errorf("lakegw did not exit cleanly on SIGTERM: %v\nlogs:\n%s", err, g.Logs())
		}
	case <-time.After(10 * time.Second):
		g.cmd.Process.Kill()
		g.t.Errorf("lakegw did not stop within 10s of SIGTERM\nlogs:\n%s", g.Logs())
	}
}

// cpuSeconds is the user+system CPU time the process has used.
func (g *gateway) cpuSeconds(t *testing.T) float64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", g.cmd.Process.Pid))
	if err != nil {
		t.Fatalf("read /proc stat: %v", err)
	}
	// Fields after the parenthesised command name; utime and stime are the
	// 14th and 15th fields of the whole line.
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	utime, _ := strconv.ParseFloat(fields[11], 64)
	stime, _ := strconv.ParseFloat(fields[12], 64)
	return (utime + stime) / 100 // USER_HZ is 100 on Linux
}
