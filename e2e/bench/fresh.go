package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// latencies are the samples of one freshness measurement.
type latencies struct {
	// EndToEnd runs from the start of the write (commit or produce) to the
	// moment a consumer already waiting at the high watermark has the
	// first record of it.
	EndToEnd []time.Duration
	// Write is how long the commit or produce call itself took.
	Write []time.Duration
}

func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(p*float64(len(s))+0.5) - 1
	return s[min(max(i, 0), len(s)-1)]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// measureFreshness writes samples times through write, which makes the
// records from offset `from` on visible (a snapshot commit, a produce) and
// returns how many records it wrote; a consumer that waits at the high
// watermark reports when the first of them arrives.
func measureFreshness(ctx context.Context, addr, topic string, from int64, samples int, write func() (int64, error)) (latencies, error) {
	var out latencies
	cl, err := kgo.NewClient(consumerOpts(addr, topic, from)...)
	if err != nil {
		return out, err
	}
	defer cl.Close()
	var want atomic.Int64
	want.Store(-1)
	arrived := make(chan time.Time, 1)
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	consumerErr := make(chan error, 1)
	go func() {
		for {
			fs := cl.PollFetches(cctx)
			if cctx.Err() != nil {
				consumerErr <- nil
				return
			}
			if errs := fs.Errors(); len(errs) > 0 {
				consumerErr <- errs[0].Err
				return
			}
			now := time.Now()
			fs.EachRecord(func(r *kgo.Record) {
				if r.Offset == want.Load() {
					select {
					case arrived <- now:
					default:
					}
				}
			})
		}
	}()
	// Let the consumer reach the high watermark and park in a long-poll.
	time.Sleep(time.Second)
	next := from
	rng := rand.New(rand.NewPCG(uint64(from), 1))
	for range samples {
		// A random pause, so that writes land at every phase of the
		// gateway's catalog polling.
		time.Sleep(time.Duration(50+rng.IntN(250)) * time.Millisecond)
		want.Store(next)
		t0 := time.Now()
		n, err := write()
		if err != nil {
			return out, err
		}
		out.Write = append(out.Write, time.Since(t0))
		select {
		case t := <-arrived:
			out.EndToEnd = append(out.EndToEnd, t.Sub(t0))
		case err := <-consumerErr:
			return out, fmt.Errorf("freshness consumer of %s: %v", addr, err)
		case <-time.After(30 * time.Second):
			return out, fmt.Errorf("record at offset %d of %s did not arrive within 30 s", next, addr)
		case <-ctx.Done():
			return out, ctx.Err()
		}
		next += n
	}
	return out, nil
}
