package main

import (
	"context"
	"fmt"
	"hash/crc32"
	"os"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lakegw/lakegw/e2e/internal/procs"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// consumeResult is one consumer's pass over [from, to).
type consumeResult struct {
	Records int64
	Bytes   int64 // key + value + header keys and values: the same for both servers
	Elapsed time.Duration
	// Sum is a CRC-32C over every record's offset, key, value, headers and
	// timestamp, in offset order: equal sums mean both servers served the
	// same records.
	Sum uint32
	// ClientCPU is the CPU seconds this process (the consumer, with its
	// checksum of every record) used during the pass: on a machine the
	// consumer shares with the server, the part of the cores the server
	// cannot have (0: another process consumed).
	ClientCPU float64
}

func (r consumeResult) recsPerSec() float64 { return float64(r.Records) / r.Elapsed.Seconds() }
func (r consumeResult) mbPerSec() float64   { return float64(r.Bytes) / 1e6 / r.Elapsed.Seconds() }

func recordBytes(r *kgo.Record) int64 {
	n := len(r.Key) + len(r.Value)
	for _, h := range r.Headers {
		n += len(h.Key) + len(h.Value)
	}
	return int64(n)
}

func sumRecord(sum uint32, r *kgo.Record) uint32 {
	var b [16]byte
	putInt64(b[:8], r.Offset)
	putInt64(b[8:], r.Timestamp.UnixMilli())
	sum = crc32.Update(sum, castagnoli, b[:])
	sum = crc32.Update(sum, castagnoli, r.Key)
	sum = crc32.Update(sum, castagnoli, r.Value)
	for _, h := range r.Headers {
		sum = crc32.Update(sum, castagnoli, []byte(h.Key))
		sum = crc32.Update(sum, castagnoli, h.Value)
	}
	return sum
}

func putInt64(b []byte, v int64) {
	for i := range 8 {
		b[i] = byte(v >> (56 - 8*i))
	}
}

// consumerOpts is the one franz-go configuration every measured consumer
// uses, against Kafka and lakegw alike: franz-go's defaults but a shorter
// long-poll (MaxWait), which matters only at the high watermark.
func consumerOpts(addr, topic string, from int64) []kgo.Opt {
	return []kgo.Opt{
		kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(from)}}),
		kgo.FetchMaxWait(500 * time.Millisecond),
	}
}

// consume reads [from, to) of partition 0 of topic and times it from client
// creation to the last record. each, when set, sees every record.
func consume(ctx context.Context, addr, topic string, from, to int64, each func(*kgo.Record)) (consumeResult, error) {
	var res consumeResult
	start := time.Now()
	cpu0 := procs.CPUSeconds(os.Getpid())
	cl, err := kgo.NewClient(consumerOpts(addr, topic, from)...)
	if err != nil {
		return res, err
	}
	defer cl.Close()
	next := from
	for next < to {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		if errs := fs.Errors(); len(errs) > 0 {
			return res, fmt.Errorf("fetch %s at %d from %s: %v", topic, next, addr, errs[0].Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset < next || r.Offset >= to {
				return
			}
			if r.Offset != next {
				err = fmt.Errorf("%s: offset %d after %d", addr, r.Offset, next-1)
			}
			next = r.Offset + 1
			res.Records++
			res.Bytes += recordBytes(r)
			res.Sum = sumRecord(res.Sum, r)
			if each != nil {
				each(r)
			}
		})
		if err != nil {
			return res, err
		}
	}
	res.Elapsed = time.Since(start)
	res.ClientCPU = procs.CPUSeconds(os.Getpid()) - cpu0
	return res, nil
}

// consumeMany runs n consumers of [from, to) at once and returns the wall
// time of all of them and their total.
func consumeMany(ctx context.Context, addr, topic string, n int, from, to int64) (consumeResult, error) {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		total consumeResult
		first error
		sums  = map[uint32]bool{}
	)
	start := time.Now()
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := consume(ctx, addr, topic, from, to, nil)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && first == nil {
				first = err
			}
			total.Records += r.Records
			total.Bytes += r.Bytes
			sums[r.Sum] = true
			total.Sum = r.Sum
		}()
	}
	wg.Wait()
	total.Elapsed = time.Since(start)
	if first == nil && len(sums) != 1 {
		first = fmt.Errorf("%d consumers of the same range saw %d different record streams", n, len(sums))
	}
	return total, first
}

// endOffset returns the high watermark of partition 0.
func endOffset(ctx context.Context, addr, topic string) (int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return 0, err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	offs, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		return 0, err
	}
	o, ok := offs.Lookup(topic, 0)
	if !ok {
		return 0, fmt.Errorf("no end offset for %s/0", topic)
	}
	if o.Err != nil {
		return 0, o.Err
	}
	return o.Offset, nil
}

// waitEndOffset waits until topic's end offset reaches want (lakegw indexes
// snapshots in the background after it starts serving).
func waitEndOffset(ctx context.Context, addr, topic string, want int64, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last int64 = -1
	var lastErr error
	for time.Now().Before(deadline) {
		o, err := endOffset(ctx, addr, topic)
		if err == nil && o >= want {
			if o > want {
				return fmt.Errorf("%s has %d records, want %d", topic, o, want)
			}
			return nil
		}
		last, lastErr = o, err
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s end offset %d (err %v), want %d after %v", topic, last, lastErr, want, timeout)
}

// copyToKafka reads every record of topic from lakegw and produces it to
// Kafka unchanged (key, value, headers, timestamp), into one partition.
func copyToKafka(ctx context.Context, gwAddr, kafkaAddr, topic string, n int64) (consumeResult, error) {
	cl, err := newProducer(ctx, kafkaAddr, topic, 1)
	if err != nil {
		return consumeResult{}, err
	}
	defer cl.Close()
	var (
		mu     sync.Mutex
		popErr error
	)
	res, err := consume(ctx, gwAddr, topic, 0, n, func(r *kgo.Record) {
		out := &kgo.Record{Key: r.Key, Value: r.Value, Headers: r.Headers, Timestamp: r.Timestamp, Partition: 0}
		cl.Produce(ctx, out, func(_ *kgo.Record, err error) {
			if err != nil {
				mu.Lock()
				if popErr == nil {
					popErr = err
				}
				mu.Unlock()
			}
		})
	})
	if err != nil {
		return res, err
	}
	if err := cl.Flush(ctx); err != nil {
		return res, err
	}
	mu.Lock()
	defer mu.Unlock()
	return res, popErr
}

// newProducer returns a producer of topic with the settings of the copy:
// no compression (lakegw serves uncompressed batches by default), creating
// the topic with one partition if it does not exist.
func newProducer(ctx context.Context, addr, topic string, partitions int32) (*kgo.Client, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerLinger(5*time.Millisecond), kgo.DefaultProduceTopic(topic))
	if err != nil {
		return nil, err
	}
	resp, err := kadm.NewClient(cl).CreateTopic(ctx, partitions, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil {
		cl.Close()
		return nil, fmt.Errorf("create topic %s: %w", topic, err)
	}
	return cl, nil
}
