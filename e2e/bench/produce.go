package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lakegw/lakegw/e2e/internal/procs"
)

// The produce passes: the same franz-go producer (kgo's defaults:
// idempotent, acks=all; uncompressed, 5 ms linger) writes the same records
// to a new topic of the Kafka broker and to a new raw topic of lakegw, and
// the throughput of each is the records acknowledged per second.

// producePartitions is the partitions of every produce pass's topic.
const producePartitions = 4

// produceRecord is record i of a produce pass: a 16-byte key and a
// 200-byte JSON value, about the size of the consume passes' rows.
func produceRecord(i int64) *kgo.Record {
	v := fmt.Sprintf(`{"id":%d,"customer":"c%06d","status":"NEW","amount":%d.%02d,"note":"%s"}`,
		i, i%100000, i%10000, i%100, strings.Repeat("x", 120))
	return &kgo.Record{Key: []byte(fmt.Sprintf("order-%010d", i)), Value: []byte(v)}
}

// producePass creates topic with producePartitions partitions and produces
// n records to it (after one untimed record), returning how long until the
// last was acknowledged.
func producePass(ctx context.Context, addr, topic string, n int64) (consumeResult, error) {
	cl, err := newProducer(ctx, addr, topic, producePartitions)
	if err != nil {
		return consumeResult{}, err
	}
	defer cl.Close()
	// The clock starts once the new topic has taken a record: a Kafka
	// broker elects the partitions' leaders a moment after CreateTopics,
	// and a producer that finds none waits for its next metadata refresh
	// (kgo: up to 5 s), which timed passes at a sixth of the broker's rate.
	if err := cl.ProduceSync(ctx, produceRecord(n)).FirstErr(); err != nil {
		return consumeResult{}, fmt.Errorf("first record to %s: %w", topic, err)
	}
	var bytes atomic.Int64
	var firstErr atomic.Pointer[error]
	cpu0 := procs.CPUSeconds(os.Getpid())
	start := time.Now()
	for i := range n {
		r := produceRecord(i)
		cl.Produce(ctx, r, func(r *kgo.Record, err error) {
			if err != nil {
				firstErr.CompareAndSwap(nil, &err)
				return
			}
			bytes.Add(int64(len(r.Key) + len(r.Value)))
		})
	}
	if err := cl.Flush(ctx); err != nil {
		return consumeResult{}, err
	}
	res := consumeResult{Records: n, Bytes: bytes.Load(), Elapsed: time.Since(start), ClientCPU: procs.CPUSeconds(os.Getpid()) - cpu0}
	if e := firstErr.Load(); e != nil {
		return res, fmt.Errorf("produce to %s: %w", topic, *e)
	}
	return res, nil
}

// producedFiles counts the data files and bytes under a raw topic's table
// directory (lakegw's embedded warehouse: <data-dir>/warehouse/kafka.db/<topic>).
func producedFiles(dataDir, topic string) (files int, size int64, err error) {
	root := filepath.Join(dataDir, "warehouse", "kafka.db", topic, "data")
	err = filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() && strings.HasSuffix(path, ".parquet") {
			info, err := d.Info()
			if err != nil {
				return err
			}
			files++
			size += info.Size()
		}
		return nil
	})
	return files, size, err
}

// produceFreshness is produce-to-consume on addr: a consumer waiting at
// the end of a raw topic, a producer writing 10 records at a time.
func produceFreshness(ctx context.Context, addr, topic string, samples int) (latencies, error) {
	cl, err := newProducer(ctx, addr, topic, 1)
	if err != nil {
		return latencies{}, err
	}
	defer cl.Close()
	var next int64
	return measureFreshness(ctx, addr, topic, 0, samples, func() (int64, error) {
		var recs []*kgo.Record
		for range 10 {
			recs = append(recs, produceRecord(next))
			next++
		}
		return 10, cl.ProduceSync(ctx, recs...).FirstErr()
	})
}

// producePasses runs c.reps produce passes on Kafka and on lakegw (gateway
// g), interleaved, then measures produce-to-consume on lakegw and the
// files the first pass's commits wrote.
func producePasses(ctx context.Context, c config, r *results, kafka, g *procs.Proc, dataDir string) error {
	for rep := range c.reps {
		cpu0 := procs.CPUSeconds(kafka.Pid())
		kp, err := producePass(ctx, kafka.Addr, fmt.Sprintf("produce-%d", rep), c.produceRecords)
		if err != nil {
			return fmt.Errorf("kafka: %w", err)
		}
		r.produce["kafka"] = append(r.produce["kafka"], row{res: kp, cpu: procs.CPUSeconds(kafka.Pid()) - cpu0})
		cpu0 = procs.CPUSeconds(g.Pid())
		lp, err := producePass(ctx, g.Addr, fmt.Sprintf("produce_%d", rep), c.produceRecords)
		if err != nil {
			return fmt.Errorf("lakegw: %w", err)
		}
		r.produce["lakegw"] = append(r.produce["lakegw"], row{res: lp, cpu: procs.CPUSeconds(g.Pid()) - cpu0})
		logf("produce rep %d: kafka %.0f rec/s, lakegw %.0f rec/s", rep+1, kp.recsPerSec(), lp.recsPerSec())
	}
	files, size, err := producedFiles(dataDir, "produce_0")
	if err != nil {
		return fmt.Errorf("files of produce_0: %w", err)
	}
	r.produceFiles, r.produceFileBytes = files, size
	if r.produceFresh, err = produceFreshness(ctx, g.Addr, "produce_fresh", c.freshSamples); err != nil {
		return fmt.Errorf("lakegw produce-to-consume: %w", err)
	}
	logf("produce-to-consume on lakegw: p50 %.0f ms, p99 %.0f ms", ms(percentile(r.produceFresh.EndToEnd, .5)), ms(percentile(r.produceFresh.EndToEnd, .99)))
	return nil
}
