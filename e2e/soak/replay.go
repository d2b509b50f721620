package main

import (
	"context"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// replayResult is a cold read of one topic from its log start, by a fresh
// consumer of a freshly started gateway.
type replayResult struct {
	topic   string
	records int64
	elapsed time.Duration
	// window is the number of records timed at the start (first) and at
	// the end (last) of the log.
	window      int
	first, last time.Duration
	mat         *matTable
}

// replay reads every partition of spec.topic from its start up to ends,
// applying each record, and times the first and the last window records.
func replay(ctx context.Context, addr string, spec tableSpec, ends map[int32]int64, window int) (replayResult, error) {
	res := replayResult{topic: spec.topic, mat: newMatTable(spec)}
	parts := map[int32]kgo.Offset{}
	for p := range ends {
		parts[p] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{spec.topic: parts}),
		kgo.FetchMaxWait(500*time.Millisecond),
		// Small fetches, so that a window of records spans many polls and
		// is timed closely (lakegw still returns whole batches).
		kgo.FetchMaxBytes(64<<10), kgo.FetchMaxPartitionBytes(64<<10))
	if err != nil {
		return res, err
	}
	defer cl.Close()
	next := map[int32]int64{}
	// polls holds, per poll that returned records, when it returned and
	// how many records had arrived by then.
	type poll struct {
		at  time.Time
		cum int64
	}
	var polls []poll
	var n int64
	start := time.Now()
	deadline := start.Add(30 * time.Minute)
	done := func() bool {
		for p, end := range ends {
			if next[p] < end {
				return false
			}
		}
		return true
	}
	for !done() {
		if time.Now().After(deadline) {
			return res, fmt.Errorf("replay %s: read %d records in %v, not at the end %v yet (at %v)", spec.topic, n, time.Since(start), ends, next)
		}
		pctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		if err := ctx.Err(); err != nil {
			return res, err
		}
		for _, fe := range fs.Errors() {
			if pctx.Err() == nil || fe.Err != context.DeadlineExceeded {
				return res, fmt.Errorf("replay %s/%d: %w", fe.Topic, fe.Partition, fe.Err)
			}
		}
		before := n
		var aerr error
		fs.EachRecord(func(r *kgo.Record) {
			if aerr != nil || r.Offset >= ends[r.Partition] {
				return
			}
			aerr = res.mat.apply(r)
			next[r.Partition] = r.Offset + 1
			n++
		})
		if aerr != nil {
			return res, aerr
		}
		if n > before {
			polls = append(polls, poll{time.Now(), n})
		}
	}
	res.elapsed = time.Since(start)
	res.records = n
	// The first window runs from the first fetch to the poll that brought
	// its last record; the last from the poll before its first record to
	// the end. Records arrive a batch at a time, so a window is timed to
	// the poll.
	res.window = int(min(int64(window), n/4))
	if res.window == 0 {
		return res, nil
	}
	w := int64(res.window)
	for _, p := range polls {
		if p.cum >= w {
			res.first = p.at.Sub(start)
			break
		}
	}
	from := start
	for _, p := range polls {
		if p.cum > n-w {
			break
		}
		from = p.at
	}
	res.last = polls[len(polls)-1].at.Sub(from)
	return res, nil
}
