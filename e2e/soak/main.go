// Command soak is issue 11's soak benchmark: a simulated long life of
// streaming tables at full speed, every server on 127.0.0.1, bounded by a
// number of commits.
//
//	go run ./e2e/soak -commits 20000     # make soak
//	go run ./e2e/soak -commits 600       # make soak-quick (about 2 minutes)
//
// It builds lakegw and starts `lakegw serve` on a fresh data directory
// (the embedded SQLite catalog). Three writers then commit as fast as they
// can, -commits snapshots each: the quickstart demo table demo.orders (the
// quickstart package, in process), a lakegw primary-key table soak.pk
// (package lsm: upserts and deletes over a bounded key space), and
// soak.foreign, written by iceberg-go alone (appends, copy-on-write
// deletes), which expires its own snapshots from time to time. Meanwhile a
// consumer group reads every topic live, and another reads, stops for
// the middle of the run and resumes from its committed offsets. At the end
// the gateway is restarted on the same data directory and every topic is
// replayed cold from its log start.
//
// It prints `ratio <name> <value>` lines: cold replay time per 1,000
// records at the end of the log against its start (from the first record
// on: the wait for it is the cold start's one-time cost); gateway CPU per commit,
// writer commit time, and the peaks of the metadata, disk and RSS, the
// last window of commits against the first (1,000 commits, or a fifth of
// the run when shorter). Fidelity: each group's materialized copy, and
// the cold replay's, equal an iceberg-go scan of the final snapshot of
// every table, and the resumed group either got every change or a
// truncation it could detect followed by the log from its start. Results
// go to results.md and results.json in -out.
//
// With -maintain (the default) serve runs its background maintenance and
// the demo and primary-key tables carry snapshot expiry properties;
// -maintain=false passes no maintenance flag at all, for a build that has
// none.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

type config struct {
	commits   int
	pkChanges int
	keys      int
	maintain  bool
	// coldReplays is how many times the gateway restarts and every topic
	// is replayed cold at the end.
	coldReplays int
	// maintainInterval, expireAge and keepSnapshots apply with maintain.
	maintainInterval    time.Duration
	expireAge           time.Duration
	changelogRetention  time.Duration
	maxPin              time.Duration
	keepSnapshots       int
	foreignExpireEvery  int
	foreignCompactEvery int
	foreignRetain       int
	foreignLive         int
	serveFlags          []string
	out                 string
	work                string
	keep                bool
	gatewayLog          string
	lakegwBin           string
	maxDisk             int64
	timeout             time.Duration
	debugListen         string
}

// window is the number of commits per writer compared at the start and at
// the end of the run.
func (c config) window() int { return max(1, min(1000, c.commits/5)) }

func main() {
	var c config
	flag.IntVar(&c.commits, "commits", 600, "commits per table")
	flag.IntVar(&c.pkChanges, "pk-changes", 10, "upserts and deletes per commit of soak.pk")
	flag.IntVar(&c.keys, "keys", 3000, "key space of soak.pk")
	flag.IntVar(&c.coldReplays, "cold-replays", 3, "restarts of the gateway, each followed by a cold replay of every topic; the replay ratio compares the median windows")
	flag.BoolVar(&c.maintain, "maintain", true, "run serve's background maintenance (--maintain-interval) and set snapshot expiry properties on the tables lakegw writes")
	flag.DurationVar(&c.maintainInterval, "maintain-interval", 5*time.Second, "with -maintain: serve --maintain-interval")
	flag.DurationVar(&c.expireAge, "expire-age", 10*time.Second, "with -maintain: history.expire.max-snapshot-age-ms of demo.orders and soak.pk")
	flag.IntVar(&c.keepSnapshots, "keep-snapshots", 100, "with -maintain: history.expire.min-snapshots-to-keep of demo.orders and soak.pk")
	flag.DurationVar(&c.changelogRetention, "changelog-retention", 30*time.Second, "with -maintain: lakegw.retention.ms of soak.pk, the changes its topic keeps past snapshot expiry")
	flag.DurationVar(&c.maxPin, "max-pin", time.Minute, "with -maintain: lakegw.consumer.max-pin of demo.orders and soak.pk, how far back the stopped group's offsets hold history (the soak's compressed stand-in for a day)")
	flag.IntVar(&c.foreignExpireEvery, "foreign-expire-every", 0, "soak.foreign expires its snapshots every this many commits (default commits/6, at most 500)")
	flag.IntVar(&c.foreignCompactEvery, "foreign-compact-every", 200, "soak.foreign rewrites its live rows into one data file every this many commits, as a scheduled rewrite_data_files keeps a table's files few (0: never)")
	flag.IntVar(&c.foreignRetain, "foreign-retain", 20, "snapshots soak.foreign keeps when it expires")
	flag.IntVar(&c.foreignLive, "foreign-live", 2000, "soak.foreign's steady live rows: above them its deletes remove what its appends add")
	flag.Func("serve-flag", "extra lakegw serve flag --name=value (repeatable)", func(s string) error {
		if !strings.HasPrefix(s, "--") {
			return errors.New("want --name=value")
		}
		c.serveFlags = append(c.serveFlags, s)
		return nil
	})
	flag.StringVar(&c.out, "out", "", "directory for results.md and results.json (default: none, print only)")
	flag.StringVar(&c.work, "work", "", "work directory (default: a new temporary directory, removed at the end unless -keep)")
	flag.BoolVar(&c.keep, "keep", false, "keep the work directory")
	flag.StringVar(&c.gatewayLog, "gateway-log", "", "append the gateway's whole log to this file (with -serve-flag=--log-level=debug it shows every maintenance pass and its steps' times)")
	flag.StringVar(&c.lakegwBin, "lakegw", "", "lakegw binary (default: go build ./cmd/lakegw into the work directory)")
	flag.Int64Var(&c.maxDisk, "max-disk", 20<<30, "stop when the data directory exceeds this many bytes (0: no limit)")
	flag.DurationVar(&c.timeout, "timeout", 3*time.Hour, "stop after this long")
	flag.StringVar(&c.debugListen, "debug-listen", "", "serve this process's pprof profiles (the writers') on this address, as serve's --debug-listen does the gateway's")
	flag.Parse()
	if c.coldReplays < 1 {
		fmt.Fprintln(os.Stderr, "soak: -cold-replays must be at least 1")
		os.Exit(2)
	}
	if c.debugListen != "" {
		if err := serveDebug(c.debugListen); err != nil {
			fmt.Fprintf(os.Stderr, "soak: debug listener: %v\n", err)
			os.Exit(2)
		}
	}
	if c.foreignExpireEvery <= 0 {
		// A fixed pace in a long run, as a foreign table's scheduled
		// expiry: its history, and so its metadata.json, stays bounded.
		c.foreignExpireEvery = min(max(c.commits/6, 10), 500)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := run(ctx, c)
	if res != nil {
		if werr := res.write(os.Stdout, c.out); werr != nil && err == nil {
			err = werr
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "soak: %v\n", err)
		os.Exit(1)
	}
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s soak: %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

// prepare makes the work directory and the lakegw binary, and checks that
// the binary has the maintenance -maintain asks for.
func prepare(c *config) (cleanup func(), err error) {
	cleanup = func() {}
	if c.work == "" {
		if c.work, err = os.MkdirTemp("", "lakegw-soak-"); err != nil {
			return cleanup, err
		}
		if !c.keep {
			dir := c.work
			cleanup = func() { os.RemoveAll(dir) }
		}
	}
	if c.lakegwBin == "" {
		c.lakegwBin = filepath.Join(c.work, "lakegw")
		build := exec.Command("go", "build", "-o", c.lakegwBin, "github.com/lakegw/lakegw/cmd/lakegw")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return cleanup, fmt.Errorf("build lakegw: %w", err)
		}
	}
	if c.maintain && !hasMaintenance(c.lakegwBin) {
		return cleanup, errors.New("this lakegw has no `serve --maintain-interval`: run with -maintain=false")
	}
	return cleanup, nil
}

// hasMaintenance reports whether bin's serve takes --maintain-interval.
func hasMaintenance(bin string) bool {
	out, _ := exec.Command(bin, "serve", "--help").CombinedOutput()
	return strings.Contains(string(out), "-maintain-interval")
}

// waitAll runs fns concurrently and waits for them; the first error
// cancels the others and is returned.
func waitAll(parent context.Context, fns ...func(context.Context) error) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	var (
		wg    sync.WaitGroup
		once  sync.Once
		first error
	)
	for _, fn := range fns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(ctx); err != nil {
				once.Do(func() { first = err })
				cancel()
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return first
	}
	return context.Cause(parent)
}
