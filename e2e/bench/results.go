package main

import (
	"bytes"
	"cmp"
	"encoding/csv"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/lakegw/lakegw/produce"
)

type row struct {
	name string
	res  consumeResult
	cpu  float64 // server CPU seconds during the pass (0: not measured)
}

type results struct {
	cfg       config
	total     int64
	snapshots int
	refSum    uint32
	extra     []row
	reps      map[string][]row
	fan       []fanResult
	freshGW   latencies
	// freshKafka is produce-to-consume.
	freshKafka   latencies
	idleRSS      int64
	afterWarmRSS int64
	// indexPeakRSS is the peak RSS (VmHWM) of the first gateway, which
	// indexes every snapshot and serves the first read; coldPeakRSS the
	// highest peak of the gateways of the cold passes, each a new process
	// measured from its start to the end of its cold pass.
	indexPeakRSS int64
	coldPeakRSS  int64
	kafkaRSS     int64
	elapsed      time.Duration
	checkErrs    []string
	// clusterRatio is three gateways' cold throughput over one's, over
	// the same three partitions (0: not measured).
	clusterRatio float64

	// bench.orders_lsm (-lsm): lsmErr says why it was not measured;
	// lsmRefSum is the CRC of its first read, which every measured pass
	// must reproduce; lsmChanges the digest of the changes it describes,
	// lsmDigest that of bench.orders (equal to it, or checkErrs says so).
	lsmErr         string
	lsmRefSum      uint32
	lsmChanges     *changeDigest
	lsmDigest      uint64
	lsmCommits     int
	lsmCompactions int

	// produce holds the produce passes by server ("kafka", "lakegw");
	// produceFiles and produceFileBytes the data files of lakegw's first
	// produce pass; produceFresh lakegw's produce-to-consume.
	produce map[string][]row
	// txnProduce holds the transactional produce passes by server.
	txnProduce       map[string][]txnRow
	produceFiles     int
	produceFileBytes int64
	produceFresh     latencies
}

// produceMedian is the produce pass of server with the median records/s.
func (r *results) produceMedian(server string) row {
	return medianPass(r.produce[server], func(x row) row { return x })
}

// medianPass is the pass of passes with the median records/s (of the row
// each holds); the zero value when there is none.
func medianPass[T any](passes []T, rowOf func(T) row) T {
	rows := slices.Clone(passes)
	if len(rows) == 0 {
		var zero T
		return zero
	}
	slices.SortFunc(rows, func(a, b T) int { return cmp.Compare(rowOf(a).res.recsPerSec(), rowOf(b).res.recsPerSec()) })
	return rows[len(rows)/2]
}

// lsmOn says whether bench.orders_lsm is measured.
func (r *results) lsmOn() bool { return r.cfg.lsm && r.lsmErr == "" }

func (r *results) add(x row) { r.extra = append(r.extra, x) }

func (r *results) addRep(kind string, rep int, res consumeResult, cpu float64) {
	if r.reps == nil {
		r.reps = map[string][]row{}
	}
	ref, of := r.refSum, "the copied stream's"
	if strings.HasPrefix(kind, "lsm_") {
		// Another topic: compared with its own first read, whose changes
		// were checked against bench.orders (changeDigest).
		ref, of = r.lsmRefSum, "the first read of "+lsmTopic+"'s"
	}
	if kind != "floor" && res.Sum != ref {
		r.checkErrs = append(r.checkErrs, fmt.Sprintf("%s pass %d: record CRC %08x differs from %s %08x", kind, rep+1, res.Sum, of, ref))
	}
	r.reps[kind] = append(r.reps[kind], row{res: res, cpu: cpu})
}

// median returns the pass with the median records/s.
func (r *results) median(kind string) row {
	rs := slices.Clone(r.reps[kind])
	if len(rs) == 0 {
		return row{}
	}
	slices.SortFunc(rs, func(a, b row) int {
		switch x, y := a.res.recsPerSec(), b.res.recsPerSec(); {
		case x < y:
			return -1
		case x > y:
			return 1
		}
		return 0
	})
	return rs[len(rs)/2]
}

type ratio struct {
	name  string
	value float64
}

func machine() string {
	model := "unknown cpu"
	if data, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	mem := ""
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		f := strings.Fields(string(data))
		if len(f) > 1 {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			mem = fmt.Sprintf(", %.0f GiB RAM", float64(kb)/(1<<20))
		}
	}
	java := "java ?"
	if out, err := exec.Command("java", "-version").CombinedOutput(); err == nil {
		java = strings.SplitN(string(out), "\n", 2)[0]
	}
	return fmt.Sprintf("%d cores (%s)%s, %s, %s, Linux; shared with other work, so compare ratios, not absolute numbers",
		runtime.NumCPU(), model, mem, runtime.Version(), java)
}

func kafkaVersion() string {
	if v := os.Getenv("KAFKA_VERSION"); v != "" {
		return v
	}
	return "4.1.2"
}

func (r *results) write(stdout io.Writer) error {
	var md bytes.Buffer
	var recs [][]string
	csvRow := func(section, name, metric string, v float64, unit string) {
		recs = append(recs, []string{section, name, metric, strconv.FormatFloat(v, 'f', -1, 64), unit})
	}
	k, cold, warm, floor := r.median("kafka"), r.median("cold"), r.median("warm"), r.median("floor")
	fmt.Fprintf(&md, "## lakegw vs Apache Kafka %s: %d change records of a 10-column row (debezium-json)\n\n", kafkaVersion(), r.total)
	fmt.Fprintf(&md, "Machine: %s. Table: %d snapshots (inserts, then 70%% inserts / 20%% updates / 10%% deletes as merge-on-read position deletes). "+
		"Client: franz-go (and Apache Kafka's Java KafkaConsumer where noted), one consumer of partition 0 from offset 0 unless noted. lakegw --cache-bytes %d MiB, --changes-cache-bytes %d MiB, --batch-records 1000, no compression; "+
		"Kafka KRaft single node, default configuration, same records produced uncompressed. Medians of %d passes. Run took %v.\n\n",
		machine(), r.snapshots, r.cfg.cacheBytes>>20, r.cfg.changesBytes>>20, r.cfg.reps, r.elapsed.Round(time.Second))
	if r.cfg.lsm && r.lsmCommits > 0 {
		fmt.Fprintf(&md, "LSM table: %s, lakegw's own primary-key table (primary key id, 1 bucket, deduplicate merge engine, Iceberg v2), "+
			"written by the lsm package with the same changes as %s: one commit per snapshot (%d commits), universal compaction after each as `lakegw load` does (%d compactions); "+
			"the gateway serves its changelog files. Its passes run after the others of each repetition, on a new gateway.\n\n", lsmTopic, mainTopic, r.lsmCommits, r.lsmCompactions)
	}
	if len(r.cfg.gatewayEnv) > 0 || len(r.cfg.gatewayFlags) > 0 || len(r.cfg.tableProps) > 0 {
		fmt.Fprintf(&md, "Non-default settings: lakegw environment %v, flags %v, table properties %v.\n\n", r.cfg.gatewayEnv, r.cfg.gatewayFlags, r.cfg.tableProps)
	}
	fmt.Fprintf(&md, "| measurement | records | MB | s | records/s | MB/s | server CPU s | records per server CPU s | client CPU s |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	line := func(name string, x row) {
		perCPU := "-"
		cpu := "-"
		if x.cpu > 0 {
			cpu = fmt.Sprintf("%.2f", x.cpu)
			perCPU = fmt.Sprintf("%.0f", float64(x.res.Records)/x.cpu)
		}
		client := "-"
		if x.res.ClientCPU > 0 {
			client = fmt.Sprintf("%.2f", x.res.ClientCPU)
		}
		fmt.Fprintf(&md, "| %s | %d | %.1f | %.2f | %.0f | %.1f | %s | %s | %s |\n", name, x.res.Records, float64(x.res.Bytes)/1e6,
			x.res.Elapsed.Seconds(), x.res.recsPerSec(), x.res.mbPerSec(), cpu, perCPU, client)
		csvRow("throughput", name, "records", float64(x.res.Records), "")
		csvRow("throughput", name, "bytes", float64(x.res.Bytes), "B")
		csvRow("throughput", name, "seconds", x.res.Elapsed.Seconds(), "s")
		csvRow("throughput", name, "records_per_s", x.res.recsPerSec(), "1/s")
		csvRow("throughput", name, "mb_per_s", x.res.mbPerSec(), "MB/s")
		csvRow("throughput", name, "server_cpu_s", x.cpu, "s")
		csvRow("throughput", name, "client_cpu_s", x.res.ClientCPU, "s")
	}
	line("Kafka", k)
	line("lakegw cold (new process: nothing cached)", cold)
	line("lakegw warm (second consumer of the same range)", warm)
	if r.cfg.java {
		line("Kafka, Java consumer", r.median("kafka_java"))
		line("lakegw cold, Java consumer", r.median("cold_java"))
		line("lakegw warm, Java consumer", r.median("warm_java"))
	}
	lsmCold, lsmWarm := r.median("lsm_cold"), r.median("lsm_warm")
	lsmMeasured := r.cfg.lsm && len(r.reps["lsm_cold"]) > 0 && len(r.reps["lsm_warm"]) > 0
	if lsmMeasured {
		line("lakegw LSM cold ("+lsmTopic+"; new process: nothing cached)", lsmCold)
		line("lakegw LSM warm ("+lsmTopic+"; second consumer of the same range)", lsmWarm)
	}
	line("floor: bare Parquet decode of the data files (arrow-go; MB = file bytes)", floor)
	for _, x := range r.extra {
		line(x.name, x)
	}
	if r.cfg.lsm && !lsmMeasured {
		fmt.Fprintf(&md, "\n**%s was not measured:** %s\n", lsmTopic, r.lsmErr)
	}

	fmt.Fprintf(&md, "\n### Freshness: a consumer waits at the high watermark; time from the start of the write to the first record\n\n")
	fmt.Fprintf(&md, "| system | write | samples | p50 ms | p99 ms | max ms | write call p50 ms |\n|---|---|---:|---:|---:|---:|---:|\n")
	fl := func(name, what string, l latencies) {
		p50, p99, mx := percentile(l.EndToEnd, .5), percentile(l.EndToEnd, .99), percentile(l.EndToEnd, 1)
		fmt.Fprintf(&md, "| %s | %s | %d | %.1f | %.1f | %.1f | %.1f |\n", name, what, len(l.EndToEnd), ms(p50), ms(p99), ms(mx), ms(percentile(l.Write, .5)))
		csvRow("freshness", name, "p50_ms", ms(p50), "ms")
		csvRow("freshness", name, "p99_ms", ms(p99), "ms")
		csvRow("freshness", name, "max_ms", ms(mx), "ms")
		csvRow("freshness", name, "write_p50_ms", ms(percentile(l.Write, .5)), "ms")
	}
	fl("lakegw (--poll-interval 200ms, default)", "iceberg-go commit of a 10-change snapshot", r.freshGW)
	fl("Kafka", "franz-go ProduceSync of 10 records (acks=all)", r.freshKafka)

	pk, pl := r.produceMedian("kafka"), r.produceMedian("lakegw")
	producing := len(r.produce["kafka"]) > 0 && len(r.produce["lakegw"]) > 0
	var producedMB float64
	if producing {
		fmt.Fprintf(&md, "\n### Produce: %d records (16-byte key, about 200-byte value) to a new %d-partition topic\n\n", r.cfg.produceRecords, producePartitions)
		fmt.Fprintf(&md, "Same franz-go producer for both (idempotent, acks=all, uncompressed, 5 ms linger); lakegw writes a raw topic "+
			"(an Iceberg table, one row per record) with --commit-interval %v (default) and acknowledges a batch once its Iceberg commit succeeded. Medians of %d passes.\n\n", produce.DefaultCommitInterval, r.cfg.reps)
		fmt.Fprintf(&md, "| server | records | MB | s | records/s | MB/s | server CPU s | client CPU s |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, x := range []struct {
			name string
			row  row
		}{{"Kafka", pk}, {"lakegw (raw topic)", pl}} {
			fmt.Fprintf(&md, "| %s | %d | %.1f | %.2f | %.0f | %.1f | %.2f | %.2f |\n", x.name, x.row.res.Records, float64(x.row.res.Bytes)/1e6,
				x.row.res.Elapsed.Seconds(), x.row.res.recsPerSec(), x.row.res.mbPerSec(), x.row.cpu, x.row.res.ClientCPU)
			csvRow("produce", x.name, "records_per_s", x.row.res.recsPerSec(), "1/s")
			csvRow("produce", x.name, "mb_per_s", x.row.res.mbPerSec(), "MB/s")
			csvRow("produce", x.name, "server_cpu_s", x.row.cpu, "s")
		}
		producedMB = float64(pl.res.Bytes) / 1e6
		fmt.Fprintf(&md, "\nlakegw's first produce pass wrote %d Parquet data files, %.1f MB, for %.1f MB of keys and values produced; "+
			"produce-to-consume on lakegw (a consumer waiting at the end, 10 records per ProduceSync): p50 %.0f ms, p99 %.0f ms.\n",
			r.produceFiles, float64(r.produceFileBytes)/1e6, producedMB, ms(percentile(r.produceFresh.EndToEnd, .5)), ms(percentile(r.produceFresh.EndToEnd, .99)))
	}

	tk, tl := r.txnProduceMedian("kafka"), r.txnProduceMedian("lakegw")
	txnProducing := len(r.txnProduce["kafka"]) > 0 && len(r.txnProduce["lakegw"]) > 0
	if txnProducing {
		fmt.Fprintf(&md, "\n### Transactional produce: the same %d records in transactions of %d, committed one after another\n\n", r.cfg.produceRecords, txnRecords)
		fmt.Fprintf(&md, "Same franz-go transactional producer for both (acks=all, uncompressed, 5 ms linger), as an exactly-once Flink sink commits a "+
			"transaction per checkpoint; lakegw stages each transaction's records in its state store and makes them visible in one Iceberg commit "+
			"when EndTxn commits, and answers EndTxn once they are. Commit latency is EndTxn's. Medians of %d passes.\n\n", r.cfg.reps)
		fmt.Fprintf(&md, "| server | records | s | records/s | commit p50 ms | commit p99 ms | server CPU s | client CPU s |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
		for _, x := range []struct {
			name string
			row  txnRow
		}{{"Kafka", tk}, {"lakegw (raw topic)", tl}} {
			fmt.Fprintf(&md, "| %s | %d | %.2f | %.0f | %.0f | %.0f | %.2f | %.2f |\n", x.name, x.row.res.Records, x.row.res.Elapsed.Seconds(),
				x.row.res.recsPerSec(), ms(percentile(x.row.commits, .5)), ms(percentile(x.row.commits, .99)), x.row.cpu, x.row.res.ClientCPU)
			csvRow("txn_produce", x.name, "records_per_s", x.row.res.recsPerSec(), "1/s")
			csvRow("txn_produce", x.name, "commit_p50_ms", ms(percentile(x.row.commits, .5)), "ms")
			csvRow("txn_produce", x.name, "commit_p99_ms", ms(percentile(x.row.commits, .99)), "ms")
			csvRow("txn_produce", x.name, "server_cpu_s", x.row.cpu, "s")
		}
	}

	fmt.Fprintf(&md, "\n### Fan-out: n consumers of the same %d records at once\n\n", r.cfg.fanoutRecords)
	fmt.Fprintf(&md, "| server | consumers | s | aggregate records/s | aggregate MB/s | server CPU s | peak RSS MiB | VmHWM MiB |\n|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, f := range r.fan {
		fmt.Fprintf(&md, "| %s | %d | %.2f | %.0f | %.1f | %.2f | %.0f | %.0f |\n", f.server, f.consumers, f.res.Elapsed.Seconds(),
			f.res.recsPerSec(), f.res.mbPerSec(), f.cpu, mib(f.peakRSS), mib(f.hwm))
		name := fmt.Sprintf("%s x%d", f.server, f.consumers)
		csvRow("fanout", name, "records_per_s", f.res.recsPerSec(), "1/s")
		csvRow("fanout", name, "mb_per_s", f.res.mbPerSec(), "MB/s")
		csvRow("fanout", name, "server_cpu_s", f.cpu, "s")
		csvRow("fanout", name, "peak_rss_mib", mib(f.peakRSS), "MiB")
		csvRow("fanout", name, "vmhwm_mib", mib(f.hwm), "MiB")
	}
	fmt.Fprintf(&md, "\nlakegw RSS: %.0f MiB idle after start, %.0f MiB after the warm pass, peaks of %.0f MiB while indexing and copying into Kafka and %.0f MiB through a cold pass; Kafka (JVM, -Xmx1G) RSS %.0f MiB.\n",
		mib(r.idleRSS), mib(r.afterWarmRSS), mib(r.indexPeakRSS), mib(r.coldPeakRSS), mib(r.kafkaRSS))

	// Ratios.
	var ratios []ratio
	add := func(name string, v float64) { ratios = append(ratios, ratio{name, v}) }
	add("warm_vs_kafka", warm.res.recsPerSec()/k.res.recsPerSec())
	add("cold_vs_kafka", cold.res.recsPerSec()/k.res.recsPerSec())
	kj, coldj, warmj := r.median("kafka_java"), r.median("cold_java"), r.median("warm_java")
	if r.cfg.java {
		add("java_warm_vs_kafka", warmj.res.recsPerSec()/kj.res.recsPerSec())
		add("java_cold_vs_kafka", coldj.res.recsPerSec()/kj.res.recsPerSec())
	}
	if lsmMeasured {
		add("lsm_warm_vs_kafka", lsmWarm.res.recsPerSec()/k.res.recsPerSec())
		add("lsm_cold_vs_kafka", lsmCold.res.recsPerSec()/k.res.recsPerSec())
	}
	if r.clusterRatio > 0 {
		add("cluster3_vs_one_gateway", r.clusterRatio)
	}
	add("floor_vs_kafka", floor.res.recsPerSec()/k.res.recsPerSec())
	add("cold_vs_floor", cold.res.recsPerSec()/floor.res.recsPerSec())
	if k.cpu > 0 && warm.cpu > 0 && cold.cpu > 0 {
		add("warm_server_cpu_vs_kafka", warm.cpu/k.cpu)
		add("cold_server_cpu_vs_kafka", cold.cpu/k.cpu)
	}
	if lsmMeasured && k.cpu > 0 && lsmWarm.cpu > 0 && lsmCold.cpu > 0 {
		add("lsm_warm_server_cpu_vs_kafka", lsmWarm.cpu/k.cpu)
		add("lsm_cold_server_cpu_vs_kafka", lsmCold.cpu/k.cpu)
	}
	add("p50_commit_to_consume_ms", ms(percentile(r.freshGW.EndToEnd, .5)))
	add("p99_commit_to_consume_ms", ms(percentile(r.freshGW.EndToEnd, .99)))
	add("kafka_p50_produce_to_consume_ms", ms(percentile(r.freshKafka.EndToEnd, .5)))
	add("kafka_p99_produce_to_consume_ms", ms(percentile(r.freshKafka.EndToEnd, .99)))
	if producing {
		add("produce_vs_kafka", pl.res.recsPerSec()/pk.res.recsPerSec())
		add("p50_produce_to_consume_ms", ms(percentile(r.produceFresh.EndToEnd, .5)))
		add("p99_produce_to_consume_ms", ms(percentile(r.produceFresh.EndToEnd, .99)))
	}
	if txnProducing {
		add("txn_produce_vs_kafka", tl.res.recsPerSec()/tk.res.recsPerSec())
		add("p50_txn_commit_ms", ms(percentile(tl.commits, .5)))
		if producedMB > 0 {
			add("files_per_produced_mb", float64(r.produceFiles)/producedMB)
			add("bytes_written_per_produced_byte", float64(r.produceFileBytes)/1e6/producedMB)
		}
	}
	var one, hundred float64
	var rss100, rss100cold float64
	for _, f := range r.fan {
		switch f.server {
		case "lakegw warm":
			add(fmt.Sprintf("rss_%d_consumers_mib", f.consumers), mib(f.peakRSS))
			if f.consumers == 1 {
				one = f.res.recsPerSec()
			}
			if f.consumers == 100 {
				hundred = f.res.recsPerSec()
				rss100 = mib(f.peakRSS)
			}
		case "lakegw cold":
			add(fmt.Sprintf("rss_%d_cold_consumers_mib", f.consumers), mib(f.peakRSS))
			if f.consumers == 100 {
				rss100cold = mib(f.peakRSS)
			}
		}
	}
	// The configured memory caches: encoded batches and derived snapshots.
	limit := mib(r.cfg.cacheBytes) + mib(r.cfg.changesBytes) + 256
	add("rss_limit_mib", limit)
	// A single large snapshot (-snapshot-records = -records: a table's
	// bootstrap) shows here: its derivation is held whole.
	add("rss_index_peak_mib", mib(r.indexPeakRSS))
	add("rss_cold_peak_mib", mib(r.coldPeakRSS))
	if one > 0 && hundred > 0 {
		add("fanout_100_vs_1", hundred/one)
	}
	fmt.Fprintf(&md, "\n### Ratios\n\n| ratio | value |\n|---|---:|\n")
	for _, x := range ratios {
		fmt.Fprintf(&md, "| %s | %.3g |\n", x.name, x.value)
		csvRow("ratio", x.name, "value", x.value, "")
	}

	// Targets of issue 6.
	type target struct {
		name string
		ok   bool
		what string
	}
	targets := []target{
		{"warm_vs_kafka >= 1.0", warm.res.recsPerSec() >= k.res.recsPerSec(), fmt.Sprintf("%.2f", warm.res.recsPerSec()/k.res.recsPerSec())},
		{"cold_vs_kafka >= 0.5", cold.res.recsPerSec() >= 0.5*k.res.recsPerSec(), fmt.Sprintf("%.2f", cold.res.recsPerSec()/k.res.recsPerSec())},
	}
	if r.cfg.java {
		targets = append(targets,
			target{"java_warm_vs_kafka >= 1.0", warmj.res.recsPerSec() >= kj.res.recsPerSec(), fmt.Sprintf("%.2f", warmj.res.recsPerSec()/kj.res.recsPerSec())},
			target{"java_cold_vs_kafka >= 0.5", coldj.res.recsPerSec() >= 0.5*kj.res.recsPerSec(), fmt.Sprintf("%.2f", coldj.res.recsPerSec()/kj.res.recsPerSec())})
	}
	if lsmMeasured {
		targets = append(targets,
			target{"lsm_warm_vs_kafka >= 1.0", lsmWarm.res.recsPerSec() >= k.res.recsPerSec(), fmt.Sprintf("%.2f", lsmWarm.res.recsPerSec()/k.res.recsPerSec())},
			target{"lsm_cold_vs_kafka >= 0.5", lsmCold.res.recsPerSec() >= 0.5*k.res.recsPerSec(), fmt.Sprintf("%.2f", lsmCold.res.recsPerSec()/k.res.recsPerSec())})
	} else if r.cfg.lsm {
		why := "not measured: " + r.lsmErr
		targets = append(targets, target{"lsm_warm_vs_kafka >= 1.0", false, why}, target{"lsm_cold_vs_kafka >= 0.5", false, why})
	}
	targets = append(targets, []target{
		{"p99_commit_to_consume <= 1000 ms", percentile(r.freshGW.EndToEnd, .99) <= time.Second, fmt.Sprintf("%.0f ms", ms(percentile(r.freshGW.EndToEnd, .99)))},
	}...)
	if rss100 > 0 {
		targets = append(targets, target{"rss_100_consumers <= cache + 256 MiB", rss100 <= limit && (rss100cold == 0 || rss100cold <= limit),
			fmt.Sprintf("warm %.0f MiB, cold %.0f MiB, limit %.0f MiB", rss100, rss100cold, limit)})
	}
	if one > 0 && hundred > 0 {
		targets = append(targets, target{"aggregate throughput of 100 consumers >= 1 consumer's", hundred >= one, fmt.Sprintf("%.2fx", hundred/one)})
	}
	// Targets of issue 20 (cold reads): for a table written in one
	// snapshot (-snapshot-records = -records), a bootstrap's.
	if int64(r.cfg.snapRecords) >= r.cfg.records {
		targets = append(targets,
			target{"issue 20: bootstrap_vs_kafka >= 1.5", cold.res.recsPerSec() >= 1.5*k.res.recsPerSec(), fmt.Sprintf("%.2f", cold.res.recsPerSec()/k.res.recsPerSec())},
			target{"issue 20: rss_cold_peak <= cache + 256 MiB", mib(r.coldPeakRSS) <= limit, fmt.Sprintf("%.0f MiB, limit %.0f MiB", mib(r.coldPeakRSS), limit)})
	} else {
		targets = append(targets,
			target{"issue 20: cold_vs_kafka >= 1.0", cold.res.recsPerSec() >= k.res.recsPerSec(), fmt.Sprintf("%.2f", cold.res.recsPerSec()/k.res.recsPerSec())},
			target{"issue 20: cold_vs_floor >= 0.3", cold.res.recsPerSec() >= 0.3*floor.res.recsPerSec(), fmt.Sprintf("%.3f", cold.res.recsPerSec()/floor.res.recsPerSec())},
			target{"issue 20: warm_vs_kafka >= 1.5", warm.res.recsPerSec() >= 1.5*k.res.recsPerSec(), fmt.Sprintf("%.2f", warm.res.recsPerSec()/k.res.recsPerSec())})
	}
	fmt.Fprintf(&md, "\n### Targets (issues 6 and 20)\n\n| target | met | value |\n|---|---|---|\n")
	for _, t := range targets {
		met := "yes"
		if !t.ok {
			met = "**no**"
		}
		fmt.Fprintf(&md, "| %s | %s | %s |\n", t.name, met, t.what)
	}
	if len(r.checkErrs) > 0 {
		fmt.Fprintf(&md, "\n**Record check failed:** %s\n", strings.Join(r.checkErrs, "; "))
	} else {
		fmt.Fprintf(&md, "\nEvery Kafka, cold and warm pass served the same records (CRC-32C over offset, timestamp, key, value and headers: %08x).\n", r.refSum)
		if lsmMeasured {
			fmt.Fprintf(&md, "%s describes the same changes as %s: %d records, and per snapshot the same multiset of (key, op, before-image, after-image) "+
				"(snapshot ids, timestamps and the order within a snapshot differ; digest %016x); every LSM pass served the records of its first read (CRC-32C %08x).\n",
				lsmTopic, mainTopic, r.total, r.lsmDigest, r.lsmRefSum)
		}
	}

	if err := os.MkdirAll(r.cfg.out, 0o755); err != nil {
		return err
	}
	mdPath := filepath.Join(r.cfg.out, "results.md")
	if err := os.WriteFile(mdPath, md.Bytes(), 0o644); err != nil {
		return err
	}
	var cb bytes.Buffer
	w := csv.NewWriter(&cb)
	_ = w.Write([]string{"section", "name", "metric", "value", "unit"})
	_ = w.WriteAll(recs)
	var fs bytes.Buffer
	fmt.Fprintln(&fs, "system,sample,end_to_end_ms,write_ms")
	for name, l := range map[string]latencies{"lakegw": r.freshGW, "kafka": r.freshKafka} {
		for i := range l.EndToEnd {
			fmt.Fprintf(&fs, "%s,%d,%.3f,%.3f\n", name, i, ms(l.EndToEnd[i]), ms(l.Write[i]))
		}
	}
	if err := os.WriteFile(filepath.Join(r.cfg.out, "freshness_samples.csv"), fs.Bytes(), 0o644); err != nil {
		return err
	}
	csvPath := filepath.Join(r.cfg.out, "results.csv")
	if err := os.WriteFile(csvPath, cb.Bytes(), 0o644); err != nil {
		return err
	}
	fmt.Fprint(stdout, md.String())
	fmt.Fprintln(stdout)
	for _, x := range ratios {
		fmt.Fprintf(stdout, "ratio %s %.3g\n", x.name, x.value)
	}
	for _, t := range targets {
		met := "met"
		if !t.ok {
			met = "NOT-met"
		}
		fmt.Fprintf(stdout, "target %s %s (%s)\n", strings.ReplaceAll(t.name, " ", ""), met, t.what)
	}
	logf("wrote %s and %s", mdPath, csvPath)
	if len(r.checkErrs) > 0 {
		return fmt.Errorf("record check failed: %s", strings.Join(r.checkErrs, "; "))
	}
	return nil
}
