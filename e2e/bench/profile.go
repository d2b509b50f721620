package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/lakegw/lakegw/e2e/internal/procs"
)

// profilePasses repeats the cold and warm passes, unmeasured, on a new
// gateway started with --debug-listen, and saves a CPU profile of each to
// dir (cold.pprof, warm.pprof): the profile of the server as the benchmark
// drives it, network and client included, for `go tool pprof`. Each profile
// lasts as long as its measured pass took, plus a second.
//
// With lsmCold > 0 it profiles a cold pass of the LSM table's topic
// (lsm-cold.pprof), expected to take about lsmCold. With fanout > 1 it
// also profiles fanout consumers of fanoutRecords at once (fanout.pprof),
// expected to take about fanoutTook.
func profilePasses(ctx context.Context, gw gatewayOpts, dir string, total int64, cold, warm time.Duration,
	fanout int, fanoutRecords int64, fanoutTook, lsmCold time.Duration) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	debugAddr, err := procs.FreeAddr()
	if err != nil {
		return err
	}
	gw.extra = append(gw.extra, "--debug-listen", debugAddr)
	g, err := startGateway(ctx, gw)
	if err != nil {
		return err
	}
	defer g.Stop()
	// profiled runs pass while a CPU profile of secs seconds is taken.
	profiled := func(name, file string, secs int, pass func() error) error {
		path := filepath.Join(dir, file)
		got := make(chan error, 1)
		go func() { got <- saveProfile(ctx, debugAddr, secs, path) }()
		if err := pass(); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		if err := <-got; err != nil {
			return fmt.Errorf("profile of %s: %w", name, err)
		}
		logf("saved a %d s CPU profile of %s: go tool pprof %s", secs, name, path)
		return nil
	}
	passSecs := func(took time.Duration) int { return int(math.Ceil(took.Seconds())) + 1 }
	readAll := func(topic string) func() error {
		return func() error { _, err := consume(ctx, g.Addr, topic, 0, total, nil); return err }
	}
	if err := profiled("the cold pass", "cold.pprof", passSecs(cold), readAll(mainTopic)); err != nil {
		return err
	}
	if err := profiled("the warm pass", "warm.pprof", passSecs(warm), readAll(mainTopic)); err != nil {
		return err
	}
	// The LSM table's topic, not read yet on this gateway: its cold pass.
	if lsmCold > 0 {
		if err := profiled("the cold pass of "+lsmTopic, "lsm-cold.pprof", passSecs(lsmCold), readAll(lsmTopic)); err != nil {
			return err
		}
	}
	// The largest fan-out on the warm gateway, for as long as the measured
	// one is expected to take (at most a minute).
	if fanout > 1 {
		secs := int(min(max(fanoutTook.Seconds(), 5), 60)) + 1
		err := profiled(fmt.Sprintf("%d consumers at once", fanout), "fanout.pprof", secs, func() error {
			_, err := consumeMany(ctx, g.Addr, mainTopic, fanout, 0, fanoutRecords)
			return err
		})
		if err != nil {
			return err
		}
	}
	// What the warm gateway holds: go tool pprof -sample_index inuse_space.
	path := filepath.Join(dir, "heap.pprof")
	if err := saveURL(ctx, fmt.Sprintf("http://%s/debug/pprof/heap", debugAddr), path); err != nil {
		return fmt.Errorf("heap profile: %w", err)
	}
	logf("saved the heap profile after the warm pass: go tool pprof %s", path)
	return nil
}

func saveProfile(ctx context.Context, addr string, secs int, path string) error {
	return saveURL(ctx, fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, secs), path)
}

func saveURL(ctx context.Context, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
