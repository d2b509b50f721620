package main

import (
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/lakegw/lakegw/e2e/internal/procs"
)

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
			if rss, _ := procs.MemStat(pid); rss > peak {
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

// The bench keeps 1 MiB of a server's log once it passes 4 MiB, and shows
// the last 8000 bytes in errors.
func newLogTail() *procs.LogTail { return procs.NewLogTail(4<<20, 1<<20, 8000) }

func startGateway(ctx context.Context, o gatewayOpts) (*procs.Proc, error) {
	addr, err := procs.FreeAddr()
	if err != nil {
		return nil, err
	}
	args := []string{"serve", "--data-dir", o.dataDir, "--listen", addr, "--log-format", "json", "--log-level", "warn",
		"--cache-bytes", strconv.FormatInt(o.cacheBytes, 10),
		"--changes-cache-bytes", strconv.FormatInt(o.changesBytes, 10)}
	args = append(args, o.extra...)
	cmd := exec.Command(o.bin, args...)
	cmd.Env = append(os.Environ(), o.env...)
	return procs.StartServing(ctx, "lakegw", addr, cmd, newLogTail(), 120*time.Second)
}

func startKafka(ctx context.Context, script, dir string, echo io.Writer) (*procs.Proc, error) {
	addr, err := procs.FreeAddr()
	if err != nil {
		return nil, err
	}
	caddr, err := procs.FreeAddr()
	if err != nil {
		return nil, err
	}
	_, port, _ := net.SplitHostPort(addr)
	_, cport, _ := net.SplitHostPort(caddr)
	// The Kafka wrapper script execs java in the process group Start
	// gives it, so Stop stops java too.
	p, err := procs.Start("kafka", addr, exec.Command("bash", script, "run", dir, port, cport), newLogTail(), echo)
	if err != nil {
		return nil, err
	}
	return p, nil
}
