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
	// changes counts the records that are not compacted-prefix rows.
	changes int64
	// window is the number of change records timed at the start and at
	// the end of the log; first and last are the time per 1,000 there.
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
	// Connect first: the first window times fetching, not dialing.
	if err := cl.Ping(ctx); err != nil {
		return res, fmt.Errorf("replay %s: %w", spec.topic, err)
	}
	next := map[int32]int64{}
	// polls holds, per poll that returned records, when it returned and
	// how many records had arrived by then.
	type poll struct {
		at  time.Time
		cum int64
	}
	var polls []poll
	var n, changes int64 // records; those that are not compacted-prefix rows
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
		before := changes
		var aerr error
		fs.EachRecord(func(r *kgo.Record) {
			if aerr != nil || r.Offset >= ends[r.Partition] {
				return
			}
			aerr = res.mat.apply(r)
			next[r.Partition] = r.Offset + 1
			n++
			if header(r, "lakegw.op") != "r" {
				changes++
			}
		})
		if aerr != nil {
			return res, aerr
		}
		if changes > before {
			polls = append(polls, poll{time.Now(), changes})
		}
	}
	res.elapsed = time.Since(start)
	res.records, res.changes = n, changes
	// Only change records are timed: a compacted prefix (one snapshot's
	// live rows) reads at another pace than the history it replaced.
	res.window = int(min(int64(window), changes/4))
	if res.window == 0 || len(polls) < 2 {
		return res, nil
	}
	// Records arrive a batch at a time: a window is timed over whole
	// polls, as a rate scaled to 1,000 records. The start window begins at
	// the first record, not at the first fetch, which carries the
	// one-time costs of a cold gateway (opening the table, starting the
	// read-ahead) that say nothing of how reading grows with history.
	w := int64(res.window)
	per1000 := func(a, b poll) time.Duration {
		if b.cum <= a.cum {
			return 0
		}
		return b.at.Sub(a.at) * 1000 / time.Duration(b.cum-a.cum)
	}
	j := 1
	for j < len(polls)-1 && polls[j].cum < w {
		j++
	}
	from := 0
	for i, p := range polls[:len(polls)-1] {
		if p.cum <= changes-w {
			from = i
		}
	}
	if j > from {
		return res, nil // the two windows share polls: nothing to compare
	}
	res.first = per1000(polls[0], polls[j])
	res.last = per1000(polls[from], polls[len(polls)-1])
	return res, nil
}
