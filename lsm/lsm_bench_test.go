package lsm

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// benchBatch is the number of writes per commit in the benchmarks.
const benchBatch = 10000

// benchWrites fills w with one commit's writes: 70 % new keys, 25 %
// updates of earlier keys, 5 % deletes; it returns the bytes of the same
// writes as JSON lines (what `lakegw load` would read): the "ingested"
// bytes of write amplification.
func benchWrites(b *testing.B, w *Writer, rng *rand.Rand, next *int64) int64 {
	var in int64
	for range benchBatch {
		var row map[string]any
		switch x := rng.IntN(100); {
		case x < 70 || *next == 0:
			id := *next
			*next++
			row = map[string]any{"id": id, "name": fmt.Sprintf("item-%d", id), "qty": int64(rng.IntN(1000)), "price": float64(rng.IntN(10000)) / 100}
		case x < 95:
			id := rng.Int64N(*next)
			row = map[string]any{"id": id, "name": fmt.Sprintf("item-%d-v%d", id, rng.IntN(9)), "qty": int64(rng.IntN(1000)), "price": float64(rng.IntN(10000)) / 100}
		default:
			row = map[string]any{"id": rng.Int64N(*next)}
			line, _ := json.Marshal(row)
			in += int64(len(line)) + 1
			if err := w.Delete(row); err != nil {
				b.Fatal(err)
			}
			continue
		}
		line, _ := json.Marshal(row)
		in += int64(len(line)) + 1
		if err := w.Upsert(row); err != nil {
			b.Fatal(err)
		}
	}
	return in
}

// BenchmarkLsmIngest commits batches of 10,000 writes to a 4-bucket
// deduplicate table with the default compaction configuration (universal,
// trigger 5, run after every commit as `lakegw load` does) and reports
// records/s and write amplification (bytes of data, delete, changelog and
// compacted files written per byte of JSON ingested), on a v2 table
// (position delete files) and a v3 table (deletion vectors).
func BenchmarkLsmIngest(b *testing.B) {
	for _, version := range formatVersions {
		b.Run(fmt.Sprintf("v%d", version), func(b *testing.B) { benchIngest(b, version) })
	}
}

func benchIngest(b *testing.B, version int) {
	ctx := context.Background()
	cat := testCatalog(b, b.TempDir())
	tb := createTestTable(b, cat, "bench_ingest", CreateOptions{Buckets: 4, FormatVersion: version}, Options{})
	rng := rand.New(rand.NewPCG(1, 2))
	var next, in, written, compacted int64
	var compactTime time.Duration
	b.ResetTimer()
	start := time.Now()
	for i := 0; i < b.N; i++ {
		w, err := tb.NewWriter(ctx)
		if err != nil {
			b.Fatal(err)
		}
		in += benchWrites(b, w, rng, &next)
		res, err := w.Commit(ctx)
		if err != nil {
			b.Fatal(err)
		}
		written += res.BytesWritten
		cs := time.Now()
		cr, err := tb.Compact(ctx, false)
		if err != nil {
			b.Fatal(err)
		}
		compactTime += time.Since(cs)
		compacted += cr.BytesOut
	}
	elapsed := time.Since(start)
	b.ReportMetric(float64(b.N*benchBatch)/elapsed.Seconds(), "records/s")
	b.ReportMetric(float64(written+compacted)/float64(in), "write-amp")
	b.ReportMetric(float64(compacted)/float64(in), "compaction-write-amp")
	b.ReportMetric(float64(compactTime)/float64(elapsed)*100, "%compaction-time")
}

// BenchmarkLsmCompaction measures a full compaction of a table of 10
// commits (100,000 writes, overlapping keys) per iteration: rows/s merged
// and its output bytes per input byte.
func BenchmarkLsmCompaction(b *testing.B) {
	ctx := context.Background()
	var rows, bytesIn, bytesOut int64
	var elapsed time.Duration
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		cat := testCatalog(b, b.TempDir())
		tb := createTestTable(b, cat, "bench_compact", CreateOptions{Buckets: 4}, Options{})
		rng := rand.New(rand.NewPCG(3, 4))
		var next int64
		for range 10 {
			w, err := tb.NewWriter(ctx)
			if err != nil {
				b.Fatal(err)
			}
			benchWrites(b, w, rng, &next)
			if _, err := w.Commit(ctx); err != nil {
				b.Fatal(err)
			}
		}
		// A cold cache, as a compaction of files written by another
		// process would have.
		tb.cache = newFileCache(tb.opts.CacheBytes)
		b.StartTimer()
		start := time.Now()
		cr, err := tb.Compact(ctx, true)
		if err != nil {
			b.Fatal(err)
		}
		elapsed += time.Since(start)
		rows += cr.RowsIn
		bytesIn += cr.BytesIn
		bytesOut += cr.BytesOut
	}
	b.ReportMetric(float64(rows)/elapsed.Seconds(), "rows/s")
	b.ReportMetric(float64(bytesOut)/float64(bytesIn), "out/in-bytes")
}
