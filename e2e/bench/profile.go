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
)

// profilePasses repeats the cold and warm passes, unmeasured, on a new
// gateway started with --debug-listen, and saves a CPU profile of each to
// dir (cold.pprof, warm.pprof): the profile of the server as the benchmark
// drives it, network and client included, for `go tool pprof`. Each profile
// lasts as long as its measured pass took, plus a second.
//
// With lsmCold > 0 it profiles a cold pass of the LSM table's topic
// (lsm-cold.pprof), expected to take about lsmCold. With fanout > 1 it also profiles fanout consumers of fanoutRecords at
// once (fanout.pprof), expected to take about fanoutTook.
func profilePasses(ctx context.Context, gw gatewayOpts, dir string, total int64, cold, warm time.Duration,
	fanout int, fanoutRecords int64, fanoutTook, lsmCold time.Duration) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	debugAddr, err := freeAddr()
	if err != nil {
		return err
	}
	gw.extra = append(gw.extra, "--debug-listen", debugAddr)
	g, err := startGateway(ctx, gw)
	if err != nil {
		return err
	}
	defer g.stop()
	for _, pass := range []struct {
		name string
		took time.Duration
	}{{"cold", cold}, {"warm", warm}} {
		secs := int(math.Ceil(pass.took.Seconds())) + 1
		got := make(chan error, 1)
		path := filepath.Join(dir, pass.name+".pprof")
		go func() { got <- saveProfile(ctx, debugAddr, secs, path) }()
		if _, err := consume(ctx, g.addr, mainTopic, 0, total, nil); err != nil {
			return fmt.Errorf("%s pass: %w", pass.name, err)
		}
		if err := <-got; err != nil {
			return fmt.Errorf("%s profile: %w", pass.name, err)
		}
		logf("saved a %d s CPU profile of the %s pass: go tool pprof %s", secs, pass.name, path)
	}
	// The LSM table's topic, not read yet on this gateway: its cold pass.
	if lsmCold > 0 {
		secs := int(math.Ceil(lsmCold.Seconds())) + 1
		got := make(chan error, 1)
		path := filepath.Join(dir, "lsm-cold.pprof")
		go func() { got <- saveProfile(ctx, debugAddr, secs, path) }()
		if _, err := consume(ctx, g.addr, lsmTopic, 0, total, nil); err != nil {
			return fmt.Errorf("%s cold pass: %w", lsmTopic, err)
		}
		if err := <-got; err != nil {
			return fmt.Errorf("%s cold profile: %w", lsmTopic, err)
		}
		logf("saved a %d s CPU profile of the cold pass of %s: go tool pprof %s", secs, lsmTopic, path)
	}
	// The largest fan-out on the warm gateway, for as long as the measured
	// one is expected to take (at most a minute).
	if fanout > 1 {
		secs := int(min(max(fanoutTook.Seconds(), 5), 60)) + 1
		got := make(chan error, 1)
		path := filepath.Join(dir, "fanout.pprof")
		go func() { got <- saveProfile(ctx, debugAddr, secs, path) }()
		if _, err := consumeMany(ctx, g.addr, mainTopic, fanout, 0, fanoutRecords); err != nil {
			return fmt.Errorf("fan-out pass: %w", err)
		}
		if err := <-got; err != nil {
			return fmt.Errorf("fan-out profile: %w", err)
		}
		logf("saved a %d s CPU profile of %d consumers at once: go tool pprof %s", secs, fanout, path)
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
