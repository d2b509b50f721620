package main

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/lakegw/lakegw/e2e/internal/procs"
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

// startGateway starts lakegw serve on dataDir and waits until it answers.
// The soak keeps 64 KiB of its log once it passes 1 MiB, and shows the
// last 4000 bytes in errors.
func startGateway(ctx context.Context, c config, dataDir string) (*procs.Proc, error) {
	addr, err := procs.FreeAddr()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(c.lakegwBin, serveArgs(c, dataDir, addr)...)
	logs := procs.NewLogTail(1<<20, 64<<10, 4000)
	if c.gatewayLog == "" {
		return procs.StartServing(ctx, "lakegw", addr, cmd, logs, 2*time.Minute)
	}
	// The whole log, for a run diagnosed afterwards (-gateway-log): every
	// start of the gateway appends to the same file.
	f, err := os.OpenFile(c.gatewayLog, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("gateway log: %w", err)
	}
	p, err := procs.Start("lakegw", addr, cmd, logs, f)
	if err == nil {
		err = p.WaitKafka(ctx, 2*time.Minute)
		if err != nil {
			p.Stop()
		}
	}
	if err != nil {
		_ = f.Close()
		return nil, err
	}
	return p, nil
}

// dirBytes is the size of every regular file under dir but outside the
// directories in skip. Files removed while it walks (maintenance, the
// writers' retries) are skipped.
func dirBytes(dir string, skip map[string]bool) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			if skip[path] {
				return filepath.SkipDir
			}
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
