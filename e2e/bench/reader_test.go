package main

// In-process benchmarks of lakegw's read path on the benchmark table, for
// profiling (go test -bench ... -cpuprofile): fetch.Reader over a
// topics.Registry on lakegw's embedded catalog, as `lakegw serve` wires
// them, without the network or a client.
//
//	go test ./e2e/bench -run '^$' -bench . -benchtime 5x -cpuprofile cpu.out
//	LAKEGW_BENCH_RECORDS=1000000 go test ./e2e/bench -run '^$' -bench Cold
//
// TestReaderSmoke (a few seconds) keeps the table writer and this wiring
// working in plain `go test ./...`; the benchmark program itself needs a
// Kafka broker and runs only through `make bench` / `make bench-quick`.

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/rs/zerolog"

	"github.com/lakegw/lakegw/fetch"
	"github.com/lakegw/lakegw/lake"
	"github.com/lakegw/lakegw/state"
	"github.com/lakegw/lakegw/topics"
)

// benchTable is a benchmark table written once per test binary.
type benchTable struct {
	dir     string
	changes int64
	files   []fileInfo
	bytes   int64 // encoded size of the whole topic, uncompressed
}

var (
	tables   = map[string]*benchTable{}
	tablesMu sync.Mutex
	tmpRoot  string
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "lakegw-bench-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	tmpRoot = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func getTable(tb testing.TB, records int64, snapRecords int, props iceberg.Properties) *benchTable {
	tb.Helper()
	tablesMu.Lock()
	defer tablesMu.Unlock()
	name := strconv.FormatInt(records, 10)
	for _, k := range slices.Sorted(maps.Keys(props)) {
		name += "-" + k + "=" + props[k]
	}
	if t, ok := tables[name]; ok {
		return t
	}
	ctx := context.Background()
	dir := filepath.Join(tmpRoot, name)
	cat, err := lake.OpenCatalog(ctx, dir, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tprops := maps.Clone(props)
	recent, _ := strconv.Atoi(tprops[recentFilesProp])
	delete(tprops, recentFilesProp)
	gen, err := newTableGen(ctx, cat, table.Identifier{"bench", "orders"}, 1, tprops)
	if err != nil {
		tb.Fatal(err)
	}
	gen.RecentFiles = recent
	for gen.Changes < records {
		if err := gen.commit(ctx, int(min(int64(snapRecords), records-gen.Changes))); err != nil {
			tb.Fatal(err)
		}
	}
	t := &benchTable{dir: dir, changes: gen.Changes, files: gen.DataFiles}
	// Index it once (the state store keeps the index for later gateways),
	// and learn the topic's size.
	g := openGateway(tb, t)
	g.waitIndexed(tb, t.changes)
	_, t.bytes = g.readAll(tb, mustReader(tb, fetch.Config{}))
	g.close()
	tables[name] = t
	return t
}

// inproc is lakegw's registry on a table directory, in this process.
type inproc struct {
	reg    *topics.Registry
	store  *state.Store
	cancel context.CancelFunc
	done   chan struct{}
}

func openGateway(tb testing.TB, t *benchTable) *inproc {
	return openGatewayBatches(tb, t, topics.DefaultBatchRecords)
}

// openGatewayBatches is openGateway with batchRecords records per batch
// (serve's --batch-records).
func openGatewayBatches(tb testing.TB, t *benchTable, batchRecords int) *inproc {
	defaults := topics.DefaultTopicConfig()
	defaults.BatchRecords = batchRecords
	return openGatewayConfig(tb, t, topics.Config{Defaults: defaults})
}

// openGatewayConfig is openGateway with the registry configured by cfg.
func openGatewayConfig(tb testing.TB, t *benchTable, cfg topics.Config) *inproc {
	tb.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	store, err := state.Open(ctx, filepath.Join(t.dir, "state.db"))
	if err != nil {
		tb.Fatal(err)
	}
	cat, err := lake.OpenCatalog(ctx, t.dir, nil)
	if err != nil {
		tb.Fatal(err)
	}
	reg := topics.New(cfg, cat, store, zerolog.Nop())
	g := &inproc{reg: reg, store: store, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(g.done)
		_ = reg.Run(ctx)
	}()
	<-reg.Ready()
	return g
}

func (g *inproc) topic(tb testing.TB) *topics.Topic {
	tb.Helper()
	t, ok := g.reg.Topic(mainTopic)
	if !ok {
		tb.Fatalf("topic %s is not served", mainTopic)
	}
	return t
}

func (g *inproc) waitIndexed(tb testing.TB, n int64) {
	tb.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for {
		if t, ok := g.reg.Topic(mainTopic); ok && t.Index.HighWatermark(0) == n {
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("topic not indexed to %d records", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (g *inproc) close() {
	g.cancel()
	<-g.done
	g.store.Close()
}

// readAll reads the whole topic as a consumer would, 1 MiB per fetch, and
// returns the records and bytes read.
func (g *inproc) readAll(tb testing.TB, r *fetch.Reader) (records, size int64) {
	tb.Helper()
	t := g.topic(tb)
	hw := t.Index.HighWatermark(0)
	buf := make([]byte, 0, 2<<20)
	for off := int64(0); off < hw; {
		out, err := r.Read(context.Background(), t, 0, off, 1<<20, "none", buf[:0])
		if err != nil {
			tb.Fatal(err)
		}
		if len(out) == 0 {
			tb.Fatalf("empty read at %d of %d", off, hw)
		}
		size += int64(len(out))
		end := nextOffsetOf(tb, out)
		records += end - off
		off = end
	}
	return records, size
}

func benchRecords() int64 {
	if v, err := strconv.ParseInt(os.Getenv("LAKEGW_BENCH_RECORDS"), 10, 64); err == nil && v > 0 {
		return v
	}
	return 200_000
}

// recentFilesProp is not a table property: it sets how many of the newest
// data files the benchmark table's updates and deletes hit.
const recentFilesProp = "bench.recent-files"

// BenchmarkReadColdBeforeImages measures what reading before-images costs:
// the same number and mix of changes, with updates and deletes drawn from
// the newest data file only, or from the newest 4 (the default table).
// lakegw reads every row group that holds a retired row, so each extra
// file hit is one more whole-file decode per snapshot.
func BenchmarkReadColdBeforeImages(b *testing.B) {
	for _, n := range []string{"1", "4"} {
		b.Run("updatedFiles="+n, func(b *testing.B) {
			benchReadCold(b, iceberg.Properties{recentFilesProp: n}, false)
		})
	}
}

// BenchmarkReadCold reads the whole topic through a new registry and
// reader each time: every snapshot is derived and every batch encoded.
// parquetBatch is the table's read.parquet.batch-size, the rows iceberg-go's
// reader reserves buffers for (default 131072): a proposed fix sets it per
// scan in changelog/ (table.WithArrowBatchSize).
//
// readAhead=on is fetch's read-ahead (the default): batches past each read
// are encoded in the background, the next snapshot derived ahead of the
// consumer; off sets ReadAheadBatches to -1. Both read through a disk tier,
// as lakegw serve does.
func BenchmarkReadCold(b *testing.B) {
	for _, bs := range []string{"default", "16384"} {
		for _, ra := range []bool{false, true} {
			b.Run(fmt.Sprintf("parquetBatch=%s/readAhead=%s", bs, onOff(ra)), func(b *testing.B) {
				var props iceberg.Properties
				if bs != "default" {
					props = iceberg.Properties{"read.parquet.batch-size": bs}
				}
				benchReadCold(b, props, ra)
			})
		}
	}
}

func onOff(v bool) string {
	if v {
		return "on"
	}
	return "off"
}

func benchReadCold(b *testing.B, props iceberg.Properties, readAhead bool) {
	n := benchRecords()
	t := getTable(b, n, int(min(n/10, 250_000)), props)
	b.SetBytes(t.bytes)
	b.ReportAllocs()
	var cpu time.Duration
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		g := openGateway(b, t)
		cfg := fetch.Config{CacheBytes: 64 << 20, DiskCacheDir: b.TempDir(), DiskCacheBytes: 10 << 30}
		if !readAhead {
			cfg.ReadAheadBatches = -1
		}
		r := mustReader(b, cfg)
		b.StartTimer()
		var got int64
		c0 := processCPU()
		// The label marks this read's CPU samples, including those of the
		// goroutines iceberg-go's scanner starts: pprof -tagfocus phase=cold.
		pprof.Do(context.Background(), pprof.Labels("phase", "cold"), func(context.Context) { got, _ = g.readAll(b, r) })
		cpu += processCPU() - c0
		if got != t.changes {
			b.Fatalf("read %d records, want %d", got, t.changes)
		}
		b.StopTimer()
		g.close()
		b.StartTimer()
	}
	reportCPU(b, cpu, t.changes)
}

// processCPU is the CPU time (user + system) this process has used: on a
// machine shared with other work it varies far less than wall time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func reportCPU(b *testing.B, cpu time.Duration, records int64) {
	b.ReportMetric(float64(records)*float64(b.N)/b.Elapsed().Seconds(), "records/s")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/1e6, "cpu-ms/op")
	b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/float64(records), "cpu-ns/record")
}

// BenchmarkReadWarm reads the whole topic again and again through one
// reader whose batch cache holds it: the second-consumer path.
func BenchmarkReadWarm(b *testing.B) {
	n := benchRecords()
	t := getTable(b, n, int(min(n/10, 250_000)), nil)
	g := openGateway(b, t)
	defer g.close()
	r := mustReader(b, fetch.Config{CacheBytes: 1 << 30})
	g.readAll(b, r)
	// The live heap of a warm gateway: the batch cache plus the topic's
	// cache of derived snapshots.
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	live := float64(ms.HeapAlloc) / (1 << 20)
	b.SetBytes(t.bytes)
	b.ResetTimer()
	c0 := processCPU()
	for b.Loop() {
		pprof.Do(context.Background(), pprof.Labels("phase", "warm"), func(context.Context) { g.readAll(b, r) })
	}
	reportCPU(b, processCPU()-c0, t.changes)
	b.ReportMetric(live, "live-heap-MiB")
	b.ReportMetric(float64(t.bytes)/(1<<20), "topic-MiB")
}

// BenchmarkServeWarm is the warm path as the Kafka server runs it, up to
// the socket: a Fetch's partition read by Reader.ReadPartition into the
// spans of an answer (the kmsg response around them is protocol's).
// tier=memory copies the topic's batches from the memory cache into the
// answer's buffer (which a connection writes with writev); tier=disk gives
// memory 16 MiB and leaves the rest in the disk tier's files (which a
// connection sends with sendfile), as `make bench` does with a topic ten
// times the memory cache. What writing to the socket costs is in `make
// bench`'s server CPU.
func BenchmarkServeWarm(b *testing.B) {
	for _, tier := range []string{"memory", "disk"} {
		b.Run("tier="+tier, func(b *testing.B) {
			cfg := fetch.Config{CacheBytes: 1 << 30}
			if tier == "disk" {
				cfg.CacheBytes, cfg.DiskCacheDir, cfg.DiskCacheBytes = 16<<20, b.TempDir(), 10<<30
			}
			benchServeWarm(b, cfg)
		})
	}
}

func benchServeWarm(b *testing.B, cfg fetch.Config) {
	n := benchRecords()
	t := getTable(b, n, int(min(n/10, 250_000)), nil)
	g := openGateway(b, t)
	defer g.close()
	r := mustReader(b, cfg)
	defer r.Close()
	g.readAll(b, r)
	ctx := context.Background()
	topic := g.topic(b)
	b.SetBytes(t.bytes)
	b.ReportAllocs()
	b.ResetTimer()
	c0 := processCPU()
	for b.Loop() {
		for off := int64(0); off < t.changes; {
			// One answer's spans, as the Fetch handler reads them.
			spans := r.NewSpans(1 << 20)
			v := topic.Index.View(0)
			bs, err := r.ReadPartition(ctx, topic, &v, 0, off, 1<<20, topic.Config.Compression, spans)
			if err != nil {
				b.Fatalf("fetch at %d: %v", off, err)
			}
			next := nextOffset(b, bs)
			if next <= off {
				b.Fatalf("empty fetch at %d", off)
			}
			off = next
			spans.Release()
		}
	}
	reportCPU(b, processCPU()-c0, t.changes)
}

// nextOffset is the offset after the last record of bs, from the batch
// headers (read from the file for a file range, which holds one batch).
func nextOffset(b *testing.B, bs fetch.Batches) int64 {
	var next int64 = -1
	var head [61]byte
	for _, s := range bs {
		f, at, _ := s.File()
		if f == nil {
			next = nextOffsetOf(b, s.Bytes())
			continue
		}
		if _, err := f.ReadAt(head[:], at); err != nil {
			b.Fatal(err)
		}
		next = batchEnd(head[:])
	}
	return next
}

// BenchmarkDecodeFloor is the bare Parquet decode of the table's data files.
func BenchmarkDecodeFloor(b *testing.B) {
	n := benchRecords()
	t := getTable(b, n, int(min(n/10, 250_000)), nil)
	c0 := processCPU()
	for b.Loop() {
		if _, err := decodeFloor(context.Background(), t.files); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, processCPU()-c0, t.changes)
}

// TestReaderSmoke writes a small benchmark table (updates and deletes
// included) and reads it cold and warm in process: the whole topic, once
// per record, the same bytes both times.
func TestReaderSmoke(t *testing.T) {
	bt := getTable(t, 3000, 500, nil)
	g := openGateway(t, bt)
	defer g.close()
	r := mustReader(t, fetch.Config{CacheBytes: 64 << 20})
	n1, s1 := g.readAll(t, r)
	n2, s2 := g.readAll(t, r)
	if n1 != bt.changes || n2 != n1 || s1 != s2 || s1 != bt.bytes {
		t.Fatalf("cold read %d records / %d bytes, warm %d / %d; the table has %d change records, %d bytes at first read",
			n1, s1, n2, s2, bt.changes, bt.bytes)
	}
	res, err := decodeFloor(context.Background(), bt.files)
	if err != nil {
		t.Fatal(err)
	}
	// Data file rows are the inserts and the updates' new images.
	if res.Records >= bt.changes || res.Records == 0 {
		t.Fatalf("floor decoded %d rows for %d change records", res.Records, bt.changes)
	}
}

// TestReadAheadEncodesEachBatchOnce reads a topic cold with the
// read-ahead on: after the first fetch, the batches after it are encoded
// in the background; the consumer then finds them cached, no batch is
// encoded twice, and the bytes are those of a read without read-ahead.
func TestReadAheadEncodesEachBatchOnce(t *testing.T) {
	bt := getTable(t, 3000, 500, nil)
	g := openGatewayBatches(t, bt, 250)
	defer g.close()
	topic := g.topic(t)
	batches := int64(3000 / 250) // six 500-record snapshots, 250-record batches
	r := mustReader(t, fetch.Config{ReadAheadBatches: 4, CacheBytes: 64 << 20})
	first, err := r.Read(context.Background(), topic, 0, 0, 1, "none", nil)
	if err != nil || len(first) == 0 {
		t.Fatalf("first read: %d bytes, %v", len(first), err)
	}
	// One batch read, four more encoded behind it.
	deadline := time.Now().Add(30 * time.Second)
	for r.Stats().BatchesEncodedAhead < 4 {
		if time.Now().After(deadline) {
			t.Fatalf("read-ahead encoded %d batches, want 4", r.Stats().BatchesEncodedAhead)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if st := r.Stats(); st.BatchesEncoded != 5 {
		t.Fatalf("%d batches encoded after one fetch with a window of 4, want 5", st.BatchesEncoded)
	}
	n, size := g.readAll(t, r)
	st := r.Stats()
	wantN, wantSize := g.readAll(t, mustReader(t, fetch.Config{ReadAheadBatches: -1}))
	if n != wantN || size != wantSize || n != bt.changes {
		t.Fatalf("read %d records / %d bytes with read-ahead, %d / %d without; the topic has %d records", n, size, wantN, wantSize, bt.changes)
	}
	if st.BatchesEncoded != batches || st.BatchesEncodedAhead < batches/2 {
		t.Fatalf("encoded %d batches (%d ahead) for a %d-batch topic", st.BatchesEncoded, st.BatchesEncodedAhead, batches)
	}
}

// mustReader builds a fetch reader without a disk tier.
func mustReader(tb testing.TB, cfg fetch.Config) *fetch.Reader {
	tb.Helper()
	r, err := fetch.NewReader(cfg, zerolog.Nop())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(r.Close)
	return r
}

// TestServeSendsDiskHitsFromTheirFiles serves a topic whose batches are on
// the disk tier only: the reads carry them as ranges of the cache's files,
// with the bytes a plain read gets, and their spans hold those files until
// they are released.
func TestServeSendsDiskHitsFromTheirFiles(t *testing.T) {
	bt := getTable(t, 3000, 500, nil)
	g := openGatewayBatches(t, bt, 250)
	defer g.close()
	cfg := fetch.Config{ReadAheadBatches: -1, DiskCacheDir: t.TempDir(), DiskCacheBytes: 1 << 30}
	r := mustReader(t, cfg)
	defer r.Close()
	want := make([]byte, 0, 2<<20)
	topic := g.topic(t)
	for off := int64(0); off < bt.changes; {
		out, err := r.Read(context.Background(), topic, 0, off, 1<<30, "none", want)
		if err != nil || len(out) == len(want) {
			t.Fatalf("read at %d: %d bytes, %v", off, len(out)-len(want), err)
		}
		want = out
		off = nextOffsetOf(t, out)
	}
	// Everything is encoded and on disk now: serve it again.
	var got []byte
	var held []*fetch.Spans
	for off := int64(0); off < bt.changes; {
		spans := r.NewSpans(1 << 20)
		held = append(held, spans)
		v := topic.Index.View(0)
		bs, err := r.ReadPartition(context.Background(), topic, &v, 0, off, 1<<20, "none", spans)
		if err != nil {
			t.Fatalf("fetch at %d: %v", off, err)
		}
		for _, s := range bs {
			if f, _, _ := s.File(); f == nil {
				t.Fatalf("fetch at %d: a disk hit served from memory", off)
			}
		}
		b, err := bs.ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if len(b) != bs.Len() || len(b) == 0 {
			t.Fatalf("fetch at %d: %d bytes read of %d", off, len(b), bs.Len())
		}
		got = append(got, b...)
		off = nextOffsetOf(t, b)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("served %d bytes from the disk tier's files, a plain read %d; equal: false", len(got), len(want))
	}
	if n := r.Stats().DiskRangesHeld; n == 0 {
		t.Fatal("responses not yet released hold no disk cache range")
	}
	for _, spans := range held {
		spans.Release()
	}
	if n := r.Stats().DiskRangesHeld; n != 0 {
		t.Fatalf("%d disk cache ranges still held after every response was released", n)
	}
}

// nextOffsetOf is the offset after the last record of the record batches
// in batches.
func nextOffsetOf(tb testing.TB, batches []byte) int64 {
	tb.Helper()
	next := int64(-1)
	for b := batches; len(b) >= 61; b = b[int(binary.BigEndian.Uint32(b[8:]))+12:] {
		next = batchEnd(b)
	}
	if next < 0 {
		tb.Fatalf("no batch in %d bytes", len(batches))
	}
	return next
}

// batchEnd is the offset after the last record of the batch whose header
// starts b: its base offset plus its last offset delta, plus one.
func batchEnd(b []byte) int64 {
	return int64(binary.BigEndian.Uint64(b)) + int64(binary.BigEndian.Uint32(b[23:])) + 1
}
