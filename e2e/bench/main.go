// Command bench runs lakegw side by side with a real Apache Kafka broker on
// this machine, with the same records and the same client (franz-go), and
// prints the ratios of issue 6: consume throughput (Kafka, lakegw cold,
// lakegw warm, a bare Parquet decode floor), commit-to-consume latency, and
// lakegw's memory and throughput with 1, 10 and 100 concurrent consumers.
//
//	go run ./e2e/bench -records 200000      # make bench-quick
//	go run ./e2e/bench -records 5000000     # make bench
//
// It writes an Iceberg table with iceberg-go into lakegw's embedded catalog
// (a 10-column order row; merge-on-read position deletes, so lakegw derives
// inserts, updates with before-images, and deletes), starts `lakegw serve`
// on it, reads the topic once and produces exactly those records (key,
// value, headers, timestamp) into a KRaft single-node Kafka broker started
// from Maven Central jars (kafka/kafka.sh). Every consume pass checks a
// CRC over the records, so both servers are known to serve the same bytes.
//
// With -lsm (the default) it also writes lakegw's own primary-key table
// bench.orders_lsm (package lsm) with the same changes, snapshot by snapshot
// (lsm_table.go), checks that its topic describes the same changes as
// bench.orders, and measures it cold and warm against the same Kafka topic.
//
// Output: a Markdown table, a CSV, and one `ratio <name> <value>` line per
// ratio on stdout; results.md and results.csv in -out.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lakegw/lakegw/e2e/internal/procs"
	"github.com/lakegw/lakegw/lake"
)

type config struct {
	records       int64
	snapRecords   int
	cacheBytes    int64
	changesBytes  int64
	reps          int
	fanout        []int
	fanoutRecords int64
	freshSamples  int
	// produceRecords is the records of each produce pass (0: none).
	produceRecords int64
	out            string
	work           string
	keep           bool
	lakegwBin      string
	kafkaScript    string
	verbose        bool
	tableProps     iceberg.Properties
	gatewayEnv     []string
	gatewayFlags   []string
	profile        string
	java           bool
	lsm            bool
	cluster        bool
}

func main() {
	var c config
	var fanout string
	flag.Int64Var(&c.records, "records", 200_000, "change records in the benchmark table (approximately: rounded to whole snapshots)")
	flag.IntVar(&c.snapRecords, "snapshot-records", 0, "change records per snapshot (default records/10, at most 250000)")
	flag.Int64Var(&c.cacheBytes, "cache-bytes", 64<<20, "lakegw --cache-bytes (its default)")
	flag.Int64Var(&c.changesBytes, "changes-cache-bytes", 128<<20, "lakegw --changes-cache-bytes")
	flag.IntVar(&c.reps, "reps", 3, "repetitions of the Kafka / cold / warm consume passes (medians are reported)")
	flag.StringVar(&fanout, "fanout", "1,10,100", "concurrent consumer counts")
	flag.Int64Var(&c.fanoutRecords, "fanout-records", 0, "records each fan-out consumer reads (default min(records, 50000))")
	flag.IntVar(&c.freshSamples, "fresh-samples", 40, "commit-to-consume samples per system")
	flag.Int64Var(&c.produceRecords, "produce-records", -1, "records of each produce pass (Kafka and a lakegw raw topic, same franz-go producer, acks=all); default min(records, 1000000); 0: no produce passes")
	flag.StringVar(&c.out, "out", "", "directory for results.md and results.csv (default: the work directory)")
	flag.StringVar(&c.work, "work", "", "work directory (default: a new temporary directory, removed at the end unless -keep)")
	flag.BoolVar(&c.keep, "keep", false, "keep the work directory")
	flag.StringVar(&c.lakegwBin, "lakegw", "", "lakegw binary (default: go build ./cmd/lakegw into the work directory)")
	flag.StringVar(&c.kafkaScript, "kafka-script", "", "kafka.sh (default: e2e/bench/kafka/kafka.sh of this module)")
	flag.BoolVar(&c.verbose, "v", false, "echo the Kafka broker's log")
	flag.BoolVar(&c.java, "java", true, "also consume with Apache Kafka's Java consumer (KafkaConsumer)")
	flag.BoolVar(&c.cluster, "cluster", true, "also read the table over three partitions through one gateway and through three sharing a PostgreSQL state store (--cluster)")
	flag.BoolVar(&c.lsm, "lsm", true, "also write the LSM primary-key table bench.orders_lsm with the same changes and measure it against Kafka (franz-go, cold and warm)")
	flag.StringVar(&c.profile, "profile", "", "directory for CPU profiles of lakegw during extra, unmeasured cold and warm passes (default: none)")
	flag.Func("gateway-env", "extra environment variable KEY=VALUE of the lakegw processes (repeatable), e.g. GOMEMLIMIT=400MiB", func(s string) error {
		if !strings.Contains(s, "=") {
			return fmt.Errorf("want KEY=VALUE")
		}
		c.gatewayEnv = append(c.gatewayEnv, s)
		return nil
	})
	flag.Func("gateway-flag", "extra lakegw serve flag of the lakegw processes (repeatable), e.g. --read-ahead-batches=512", func(s string) error {
		if !strings.HasPrefix(s, "--") {
			return fmt.Errorf("want --name=value")
		}
		c.gatewayFlags = append(c.gatewayFlags, s)
		return nil
	})
	flag.Func("table-prop", "extra Iceberg table property KEY=VALUE of the benchmark tables (repeatable), e.g. read.parquet.batch-size=16384", func(s string) error {
		k, v, ok := strings.Cut(s, "=")
		if !ok || k == "" {
			return fmt.Errorf("want KEY=VALUE")
		}
		if c.tableProps == nil {
			c.tableProps = iceberg.Properties{}
		}
		c.tableProps[k] = v
		return nil
	})
	flag.Parse()
	for _, s := range strings.Split(fanout, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 1 {
			fatalf("-fanout %q: want comma-separated positive counts", fanout)
		}
		c.fanout = append(c.fanout, n)
	}
	if c.snapRecords <= 0 {
		c.snapRecords = int(min(max(c.records/10, 1000), 250_000))
	}
	if c.fanoutRecords <= 0 {
		c.fanoutRecords = min(c.records, 50_000)
	}
	if c.produceRecords < 0 {
		c.produceRecords = min(c.records, 1_000_000)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, c); err != nil {
		fatalf("%v", err)
	}
}

func fatalf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "bench: "+format+"\n", args...)
	os.Exit(1)
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s bench: %s\n", time.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

func moduleDir(pkg string) (string, error) {
	out, err := exec.Command("go", "list", "-f", "{{.Dir}}", pkg).Output()
	if err != nil {
		return "", fmt.Errorf("go list %s: %w", pkg, err)
	}
	return strings.TrimSpace(string(out)), nil
}

const (
	mainTopic  = "bench.orders"
	freshTopic = "bench.fresh"
)

func run(ctx context.Context, c config) (err error) {
	began := time.Now()
	if c.work == "" {
		if c.work, err = os.MkdirTemp("", "lakegw-bench-"); err != nil {
			return err
		}
		if !c.keep {
			defer os.RemoveAll(c.work)
		}
	}
	if c.out == "" {
		c.out = c.work
		if !c.keep {
			c.out = "."
		}
	}
	if c.kafkaScript == "" {
		dir, err := moduleDir("github.com/lakegw/lakegw/e2e/bench")
		if err != nil {
			return err
		}
		c.kafkaScript = filepath.Join(dir, "kafka", "kafka.sh")
	}
	logf("work directory %s; %d records in snapshots of %d", c.work, c.records, c.snapRecords)

	// The broker takes seconds to start (and minutes to fetch, once):
	// start it first and let it come up while the table is written.
	var echo io.Writer
	if c.verbose {
		echo = os.Stderr
	}
	fetch := exec.Command("bash", c.kafkaScript, "fetch")
	fetch.Stdout, fetch.Stderr = os.Stderr, os.Stderr
	if err := fetch.Run(); err != nil {
		return fmt.Errorf("fetch the Kafka broker: %w", err)
	}
	kafka, err := startKafka(ctx, c.kafkaScript, filepath.Join(c.work, "kafka"), echo)
	if err != nil {
		return err
	}
	defer kafka.Stop()

	if c.lakegwBin == "" {
		c.lakegwBin = filepath.Join(c.work, "lakegw")
		build := exec.Command("go", "build", "-o", c.lakegwBin, "github.com/lakegw/lakegw/cmd/lakegw")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("build lakegw: %w", err)
		}
	}

	// 1. The table.
	dataDir := filepath.Join(c.work, "lakegw-data")
	t0 := time.Now()
	tabs, err := writeTables(ctx, dataDir, c)
	if err != nil {
		return err
	}
	gen, fresh := tabs.gen, tabs.fresh
	total := gen.Changes
	wrote := time.Since(t0)
	if tabs.lsm != nil {
		wrote -= tabs.lsm.Elapsed
	}
	logf("wrote %s: %d change records in %d snapshots, %d data files, in %v", mainTopic, total, gen.Snapshots, len(gen.DataFiles), wrote.Round(time.Millisecond))

	r := &results{cfg: c, total: total, snapshots: gen.Snapshots, produce: map[string][]row{}, txnProduce: map[string][]txnRow{}}
	if lt := tabs.lsm; lt != nil {
		logf("wrote %s: %d change records in %d commits, %d compactions, in %v", lsmTopic, lt.Changes, lt.Commits, lt.Compactions, lt.Elapsed.Round(time.Millisecond))
		r.lsmCommits, r.lsmCompactions = lt.Commits, lt.Compactions
	} else if tabs.lsmErr != nil {
		r.lsmErr = tabs.lsmErr.Error()
		logf("no %s, its passes are skipped: %v", lsmTopic, tabs.lsmErr)
	}
	gw := gatewayOpts{bin: c.lakegwBin, dataDir: dataDir, cacheBytes: c.cacheBytes, changesBytes: c.changesBytes, env: c.gatewayEnv, extra: c.gatewayFlags}

	// 2. First gateway: index every snapshot (count its records),
	// then read the topic once and copy it into Kafka.
	t0 = time.Now()
	g1, err := startGateway(ctx, gw)
	if err != nil {
		return err
	}
	if err := waitEndOffset(ctx, g1.Addr, mainTopic, total, 30*time.Minute); err != nil {
		g1.Stop()
		return err
	}
	idx := consumeResult{Records: total, Elapsed: time.Since(t0)}
	r.add(row{name: "lakegw index (count every snapshot at first start: derived, or a large append from its manifests)", res: idx, cpu: procs.CPUSeconds(g1.Pid())})
	logf("lakegw indexed %d records in %v", total, idx.Elapsed.Round(time.Millisecond))
	if err := kafka.WaitKafka(ctx, 3*time.Minute); err != nil {
		g1.Stop()
		return err
	}
	cpu0 := procs.CPUSeconds(g1.Pid())
	copied, err := copyToKafka(ctx, g1.Addr, kafka.Addr, mainTopic, total)
	if err != nil {
		g1.Stop()
		return fmt.Errorf("copy to kafka: %w", err)
	}
	r.add(row{name: "lakegw first read, copied into Kafka by a franz-go producer", res: copied, cpu: procs.CPUSeconds(g1.Pid()) - cpu0})
	r.refSum = copied.Sum
	logf("copied %d records (%.1f MB) into Kafka in %v", copied.Records, float64(copied.Bytes)/1e6, copied.Elapsed.Round(time.Millisecond))
	if r.lsmOn() {
		if err := lsmReference(ctx, g1.Addr, r, total); err != nil {
			g1.Stop()
			return err
		}
	}
	_, r.indexPeakRSS = procs.MemStat(g1.Pid())
	g1.Stop()
	if n, err := endOffset(ctx, kafka.Addr, mainTopic); err != nil || n != total {
		return fmt.Errorf("kafka holds %d records (%v), want %d", n, err, total)
	}

	// 3. Throughput: Kafka, lakegw cold (fresh process), lakegw warm (a
	// second consumer of the same range), interleaved per repetition.
	var g *procs.Proc
	defer func() { g.Stop() }()
	// A long-running broker has a warm JIT: one unmeasured pass first. It
	// also takes the digest of the changes bench.orders describes, which
	// the LSM topic must equal (changeDigest).
	var mainDigest changeDigest
	var each func(*kgo.Record)
	if r.lsmOn() {
		each = mainDigest.add
	}
	if _, err := consume(ctx, kafka.Addr, mainTopic, 0, total, each); err != nil {
		return err
	}
	if r.lsmOn() {
		r.lsmDigest = mainDigest.total()
		if d := mainDigest.compare(r.lsmChanges, mainTopic, lsmTopic); d != "" {
			r.checkErrs = append(r.checkErrs, fmt.Sprintf("%s does not describe the same changes as %s: %s", lsmTopic, mainTopic, d))
		} else {
			logf("%s describes the same changes as %s: %d records in %d snapshots, digest %016x", lsmTopic, mainTopic, total, len(mainDigest.snaps), r.lsmDigest)
		}
	}
	for rep := range c.reps {
		cpu0 := procs.CPUSeconds(kafka.Pid())
		kr, err := consume(ctx, kafka.Addr, mainTopic, 0, total, nil)
		if err != nil {
			return err
		}
		r.addRep("kafka", rep, kr, procs.CPUSeconds(kafka.Pid())-cpu0)

		g.Stop()
		if g, err = startGateway(ctx, gw); err != nil {
			return err
		}
		rss, _ := procs.MemStat(g.Pid())
		r.idleRSS = rss
		cpu0 = procs.CPUSeconds(g.Pid())
		cold, err := consume(ctx, g.Addr, mainTopic, 0, total, nil)
		if err != nil {
			return err
		}
		r.addRep("cold", rep, cold, procs.CPUSeconds(g.Pid())-cpu0)
		_, hwm := procs.MemStat(g.Pid())
		r.coldPeakRSS = max(r.coldPeakRSS, hwm)
		cpu0 = procs.CPUSeconds(g.Pid())
		warm, err := consume(ctx, g.Addr, mainTopic, 0, total, nil)
		if err != nil {
			return err
		}
		r.addRep("warm", rep, warm, procs.CPUSeconds(g.Pid())-cpu0)
		r.afterWarmRSS, _ = procs.MemStat(g.Pid())

		if c.java {
			if err := javaPasses(ctx, c, r, rep, kafka, &g, gw, total); err != nil {
				return err
			}
		}

		if r.lsmOn() {
			if err := lsmPasses(ctx, r, rep, &g, gw, total); err != nil {
				return err
			}
		}

		fl, err := decodeFloor(ctx, gen.DataFiles)
		if err != nil {
			return err
		}
		r.addRep("floor", rep, fl, 0)
		logf("rep %d: kafka %.0f rec/s, lakegw cold %.0f, warm %.0f, parquet floor %.0f", rep+1,
			kr.recsPerSec(), cold.recsPerSec(), warm.recsPerSec(), fl.recsPerSec())
	}

	if c.produceRecords > 0 {
		if err := producePasses(ctx, c, r, kafka, g, dataDir); err != nil {
			return err
		}
		if err := txnProducePasses(ctx, c, r, kafka, g); err != nil {
			return err
		}
	}

	if c.profile != "" {
		g.Stop()
		g = nil
		// A fan-out of n takes about n times a single warm pass of its
		// records.
		n := slices.Max(c.fanout)
		took := time.Duration(float64(r.median("warm").res.Elapsed) * float64(n) * float64(c.fanoutRecords) / float64(total))
		if err := profilePasses(ctx, gw, c.profile, total, r.median("cold").res.Elapsed, r.median("warm").res.Elapsed,
			n, c.fanoutRecords, took, r.median("lsm_cold").res.Elapsed); err != nil {
			return err
		}
		if g, err = startGateway(ctx, gw); err != nil {
			return err
		}
		if _, err := consume(ctx, g.Addr, mainTopic, 0, total, nil); err != nil {
			return err
		}
	}

	// 4. Fan-out: n consumers of the same range at once, on the warm
	// gateway, then n on a cold one; Kafka for comparison.
	for _, n := range c.fanout {
		f, err := fanOut(ctx, g, n, c.fanoutRecords)
		if err != nil {
			return err
		}
		f.server = "lakegw warm"
		r.fan = append(r.fan, f)
		kf, err := fanOut(ctx, kafka, n, c.fanoutRecords)
		if err != nil {
			return err
		}
		kf.server = "kafka"
		r.fan = append(r.fan, kf)
		logf("fan-out %d: lakegw %.0f rec/s (peak RSS %.0f MiB), kafka %.0f rec/s", n, f.res.recsPerSec(), mib(f.peakRSS), kf.res.recsPerSec())
	}
	if n := slices.Max(c.fanout); n > 1 {
		g.Stop()
		if g, err = startGateway(ctx, gw); err != nil {
			return err
		}
		f, err := fanOut(ctx, g, n, c.fanoutRecords)
		if err != nil {
			return err
		}
		f.server = "lakegw cold"
		r.fan = append(r.fan, f)
		logf("fan-out %d on a cold gateway: %.0f rec/s (peak RSS %.0f MiB)", n, f.res.recsPerSec(), mib(f.peakRSS))
	}
	r.kafkaRSS, _ = procs.MemStat(kafka.Pid())

	// 5. Freshness, with lakegw's default catalog polling (200 ms).
	fromGW := fresh.Changes
	r.freshGW, err = measureFreshness(ctx, g.Addr, freshTopic, fromGW, c.freshSamples, func() (int64, error) {
		before := fresh.Changes
		if err := fresh.commit(ctx, 10); err != nil {
			return 0, err
		}
		return fresh.Changes - before, nil
	})
	if err != nil {
		return fmt.Errorf("lakegw freshness: %w", err)
	}
	r.freshKafka, err = kafkaFreshness(ctx, kafka.Addr, c.freshSamples)
	if err != nil {
		return fmt.Errorf("kafka freshness: %w", err)
	}
	logf("freshness p99: lakegw %.0f ms, kafka %.1f ms", ms(percentile(r.freshGW.EndToEnd, .99)), ms(percentile(r.freshKafka.EndToEnd, .99)))

	// 6. Three gateways sharing the work against one (issue 21).
	if c.cluster {
		one, three, err := clusterPass(ctx, c, gw, total)
		if err != nil {
			return fmt.Errorf("cluster pass: %w", err)
		}
		r.add(one)
		r.add(three)
		r.clusterRatio = three.res.recsPerSec() / one.res.recsPerSec()
		logf("cluster: one gateway %.0f rec/s, three %.0f rec/s (%.2fx)", one.res.recsPerSec(), three.res.recsPerSec(), r.clusterRatio)
	}

	r.elapsed = time.Since(began)
	return r.write(os.Stdout)
}

// benchTables are the tables writeTables wrote.
type benchTables struct {
	gen *tableGen
	// lsm is bench.orders_lsm (nil without -lsm, or when lakegw cannot
	// create it: lsmErr says why).
	lsm    *lsmTable
	lsmErr error
	fresh  *tableGen
}

// writeTables writes the benchmark table, with -lsm the LSM table with the
// same changes (one commit per snapshot, right after it), and the small
// table the freshness measurement commits to.
func writeTables(ctx context.Context, dataDir string, c config) (benchTables, error) {
	var t benchTables
	cat, err := lake.OpenCatalog(ctx, dataDir, nil)
	if err != nil {
		return t, err
	}
	if t.gen, err = newTableGen(ctx, cat, table.Identifier{"bench", "orders"}, 1, c.tableProps); err != nil {
		return t, err
	}
	if c.lsm {
		// A table lakegw refuses to create (an unsupported column type)
		// is reported in the results rather than failing the run; any
		// later failure to write it is an error.
		t.lsm, t.lsmErr = newLSMTable(ctx, cat, c.tableProps)
	}
	for t.gen.Changes < c.records {
		if err := t.gen.commit(ctx, int(min(int64(c.snapRecords), c.records-t.gen.Changes))); err != nil {
			return t, err
		}
		if t.lsm != nil {
			if err := t.lsm.apply(ctx, t.gen.LastChanges); err != nil {
				return t, err
			}
		}
	}
	if t.fresh, err = newTableGen(ctx, cat, table.Identifier{"bench", "fresh"}, 2, c.tableProps); err != nil {
		return t, err
	}
	if err := t.fresh.commit(ctx, 10); err != nil {
		return t, err
	}
	return t, nil
}

type fanResult struct {
	server    string
	consumers int
	res       consumeResult
	peakRSS   int64
	hwm       int64
	cpu       float64
}

func fanOut(ctx context.Context, p *procs.Proc, n int, records int64) (fanResult, error) {
	procs.ResetHWM(p.Pid())
	s := sampleRSS(p.Pid())
	cpu0 := procs.CPUSeconds(p.Pid())
	res, err := consumeMany(ctx, p.Addr, mainTopic, n, 0, records)
	peak := s.Stop()
	_, hwm := procs.MemStat(p.Pid())
	if err != nil {
		return fanResult{}, fmt.Errorf("%d consumers of %s: %w", n, p.Name, err)
	}
	return fanResult{consumers: n, res: res, peakRSS: peak, hwm: hwm, cpu: procs.CPUSeconds(p.Pid()) - cpu0}, nil
}

// kafkaFreshness produces 10 records at a time (as lakegw's freshness
// snapshots hold 10 changes) and times produce-to-consume.
func kafkaFreshness(ctx context.Context, addr string, samples int) (latencies, error) {
	cl, err := newProducer(ctx, addr, freshTopic, 1)
	if err != nil {
		return latencies{}, err
	}
	defer cl.Close()
	payload := []byte(strings.Repeat("x", 600))
	return measureFreshness(ctx, addr, freshTopic, 0, samples, func() (int64, error) {
		var recs []*kgo.Record
		for i := range 10 {
			recs = append(recs, &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: payload})
		}
		return 10, cl.ProduceSync(ctx, recs...).FirstErr()
	})
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }
