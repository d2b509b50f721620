package main

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lakegw/lakegw/e2e/internal/procs"
)

// The transactional produce passes: the same franz-go transactional
// producer writes the produce passes' records to a new topic of the Kafka
// broker and to a new raw topic of lakegw, committing a transaction every
// txnRecords records, as an exactly-once Flink sink commits one per
// checkpoint. Throughput is the records committed per second; commit
// latency is EndTxn's, from the commit's start to its answer (on lakegw,
// when the records are visible).

// txnRecords is the records of each transaction.
const txnRecords = 10_000

// txnRow is one transactional produce pass and its commits' latencies.
type txnRow struct {
	row
	commits []time.Duration
}

// txnProducePass produces n records to a new topic in transactions of
// txnRecords under transactional id id (after one untimed transaction).
func txnProducePass(ctx context.Context, addr, topic, id string, n int64) (consumeResult, []time.Duration, error) {
	setup, err := newProducer(ctx, addr, topic, producePartitions)
	if err != nil {
		return consumeResult{}, nil, err
	}
	setup.Close()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.TransactionalID(id), kgo.DefaultProduceTopic(topic),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		return consumeResult{}, nil, err
	}
	defer cl.Close()
	var bytes atomic.Int64
	var firstErr atomic.Pointer[error]
	// txn produces records [from, to) in one transaction and commits it,
	// returning how long the commit took.
	txn := func(from, to int64) (time.Duration, error) {
		if err := cl.BeginTransaction(); err != nil {
			return 0, err
		}
		for i := from; i < to; i++ {
			cl.Produce(ctx, produceRecord(i), func(r *kgo.Record, err error) {
				if err != nil {
					firstErr.CompareAndSwap(nil, &err)
					return
				}
				bytes.Add(int64(len(r.Key) + len(r.Value)))
			})
		}
		if err := cl.Flush(ctx); err != nil {
			return 0, err
		}
		if e := firstErr.Load(); e != nil {
			return 0, fmt.Errorf("produce to %s: %w", topic, *e)
		}
		t0 := time.Now()
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			return 0, fmt.Errorf("commit to %s: %w", topic, err)
		}
		return time.Since(t0), nil
	}
	if _, err := txn(n, n+1); err != nil {
		return consumeResult{}, nil, fmt.Errorf("first transaction: %w", err)
	}
	bytes.Store(0)
	var commits []time.Duration
	cpu0 := procs.CPUSeconds(os.Getpid())
	start := time.Now()
	for from := int64(0); from < n; from += txnRecords {
		took, err := txn(from, min(from+txnRecords, n))
		if err != nil {
			return consumeResult{}, nil, err
		}
		commits = append(commits, took)
	}
	res := consumeResult{Records: n, Bytes: bytes.Load(), Elapsed: time.Since(start), ClientCPU: procs.CPUSeconds(os.Getpid()) - cpu0}
	return res, commits, nil
}

// txnProducePasses runs c.reps transactional produce passes on Kafka and
// on lakegw (gateway g), interleaved.
func txnProducePasses(ctx context.Context, c config, r *results, kafka, g *procs.Proc) error {
	for rep := range c.reps {
		for _, s := range []struct {
			name string
			p    *procs.Proc
		}{{"kafka", kafka}, {"lakegw", g}} {
			cpu0 := procs.CPUSeconds(s.p.Pid())
			res, commits, err := txnProducePass(ctx, s.p.Addr, fmt.Sprintf("txn_produce_%d", rep), fmt.Sprintf("bench-txn-%d", rep), c.produceRecords)
			if err != nil {
				return fmt.Errorf("%s: transactional produce: %w", s.name, err)
			}
			r.txnProduce[s.name] = append(r.txnProduce[s.name], txnRow{row: row{res: res, cpu: procs.CPUSeconds(s.p.Pid()) - cpu0}, commits: commits})
		}
		k, l := r.txnProduce["kafka"][rep], r.txnProduce["lakegw"][rep]
		logf("transactional produce rep %d: kafka %.0f rec/s (commit p50 %.0f ms), lakegw %.0f rec/s (commit p50 %.0f ms)", rep+1,
			k.res.recsPerSec(), ms(percentile(k.commits, .5)), l.res.recsPerSec(), ms(percentile(l.commits, .5)))
	}
	return nil
}

// txnProduceMedian is the transactional produce pass of server with the
// median records/s.
func (r *results) txnProduceMedian(server string) txnRow {
	return medianPass(r.txnProduce[server], func(x txnRow) row { return x.row })
}
