package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// group is a consumer group materializing every topic. A session reads,
// applies and commits; between sessions the group holds only its
// committed offsets and the copy built up to them (the copy is what a real
// consumer's sink would hold).
type group struct {
	name   string
	tables map[string]*matTable
	// truncations counts what the client reported of history that ended
	// under it (OffsetOutOfRange, a leader-epoch truncation); after each,
	// the partition's copy is dropped and read again from the log start.
	truncations []string
	// prefixRecords counts the compacted-prefix records (lakegw.op = r)
	// the group applied.
	prefixRecords int
	// next is, per topic and partition, the offset the group expects next.
	next map[string]map[int32]int64
	// atHead marks the partitions whose current read began at the log
	// start and has read only compacted-prefix records so far. A prefix
	// record anywhere else is a silent skip: the prefix rows below it
	// were never delivered, and the client was not told (silentSkips
	// says where).
	atHead      map[string]map[int32]bool
	silentSkips []string
	// records counts every record applied.
	records int64
}

func newGroup(name string, specs []tableSpec) *group {
	g := &group{name: name, tables: map[string]*matTable{}, next: map[string]map[int32]int64{}, atHead: map[string]map[int32]bool{}}
	for _, s := range specs {
		g.tables[s.topic] = newMatTable(s)
		g.next[s.topic] = map[int32]int64{}
		g.atHead[s.topic] = map[int32]bool{}
	}
	return g
}

func (g *group) topics() []string {
	var out []string
	for t := range g.tables {
		out = append(out, t)
	}
	return out
}

// session joins the group and consumes until stop says so (checked after
// every poll), committing what it applied after every poll. resumed
// sessions start from the committed offsets and treat OffsetOutOfRange as
// an error to report ("auto.offset.reset=none"), as a consumer that must
// not skip silently would.
func (g *group) session(ctx context.Context, addr string, resumed bool, stop func() bool) error {
	reset := kgo.NewOffset().AtStart()
	if resumed {
		reset = kgo.NoResetOffset()
	}
	for _, ps := range g.atHead {
		for p := range ps {
			ps[p] = false
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup(g.name), kgo.ConsumeTopics(g.topics()...),
		kgo.DisableAutoCommit(), kgo.BlockRebalanceOnPoll(), kgo.ConsumeResetOffset(reset),
		kgo.FetchMaxWait(500*time.Millisecond))
	if err != nil {
		return err
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	for !stop() {
		if err := ctx.Err(); err != nil {
			return err
		}
		pctx, cancel := context.WithTimeout(ctx, time.Second)
		fs := cl.PollFetches(pctx)
		cancel()
		err := g.handle(ctx, cl, adm, fs)
		cl.AllowRebalance()
		if err != nil {
			return err
		}
		if err := cl.CommitUncommittedOffsets(ctx); err != nil {
			return fmt.Errorf("group %s: commit: %w", g.name, err)
		}
	}
	return nil
}

// handle applies one poll's records; a partition whose history ended
// under the group is read again from its log start.
func (g *group) handle(ctx context.Context, cl *kgo.Client, adm *kadm.Client, fs kgo.Fetches) error {
	var err error
	fs.EachPartition(func(p kgo.FetchTopicPartition) {
		if err != nil {
			return
		}
		if p.Err != nil {
			err = g.partitionError(ctx, cl, adm, p.Topic, p.Partition, p.Err)
			return
		}
		m := g.tables[p.Topic]
		if m == nil {
			return
		}
		next, atHead := g.next[p.Topic], g.atHead[p.Topic]
		for _, r := range p.Records {
			want, ok := next[r.Partition]
			if ok && r.Offset < want {
				continue // already applied (a re-fetch after a seek)
			}
			if !ok {
				// A new group's first read starts at the log start.
				atHead[r.Partition] = true
			}
			if err = m.apply(r); err != nil {
				return
			}
			if header(r, "lakegw.op") != "r" {
				atHead[r.Partition] = false
			} else {
				g.prefixRecords++
				if !atHead[r.Partition] {
					g.silentSkips = append(g.silentSkips, fmt.Sprintf("%s/%d: a compacted-prefix record at offset %d after offset %d, with no truncation reported", r.Topic, r.Partition, r.Offset, want-1))
					atHead[r.Partition] = true // once per stretch of prefix
				}
			}
			next[r.Partition] = r.Offset + 1
			g.records++
		}
	})
	return err
}

func (g *group) partitionError(ctx context.Context, cl *kgo.Client, adm *kadm.Client, topic string, p int32, perr error) error {
	if errors.Is(perr, context.DeadlineExceeded) || errors.Is(perr, context.Canceled) {
		return nil
	}
	var loss *kgo.ErrDataLoss
	if !errors.As(perr, &loss) && !errors.Is(perr, kerr.OffsetOutOfRange) {
		return fmt.Errorf("group %s: %s/%d: %w", g.name, topic, p, perr)
	}
	g.truncations = append(g.truncations, fmt.Sprintf("%s/%d: %v", topic, p, perr))
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		return fmt.Errorf("group %s: log start of %s: %w", g.name, topic, err)
	}
	o, ok := starts.Lookup(topic, p)
	if !ok || o.Err != nil {
		return fmt.Errorf("group %s: log start of %s/%d: %v", g.name, topic, p, o.Err)
	}
	if m := g.tables[topic]; m != nil {
		m.reset(p)
	}
	delete(g.next[topic], p)
	g.atHead[topic][p] = true
	cl.SetOffsets(map[string]map[int32]kgo.EpochOffset{topic: {p: {Epoch: -1, Offset: o.Offset}}})
	return nil
}

// caughtUp reports whether the group has applied every offset below ends.
func (g *group) caughtUp(ends map[string]map[int32]int64) bool {
	for t, ps := range ends {
		for p, end := range ps {
			if end > 0 && g.next[t][p] < end {
				return false
			}
		}
	}
	return true
}

func header(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// endOffsets lists the high watermark of every partition of topics.
func endOffsets(ctx context.Context, addr string, topics []string) (map[string]map[int32]int64, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	offs, err := kadm.NewClient(cl).ListEndOffsets(ctx, topics...)
	if err != nil {
		return nil, err
	}
	out := map[string]map[int32]int64{}
	for _, t := range topics {
		out[t] = map[int32]int64{}
	}
	var ferr error
	offs.Each(func(o kadm.ListedOffset) {
		if o.Err != nil {
			ferr = fmt.Errorf("end offset of %s/%d: %w", o.Topic, o.Partition, o.Err)
		}
		out[o.Topic][o.Partition] = o.Offset
	})
	return out, ferr
}

// settledEnds waits until the end offsets stop moving (the gateway has
// indexed the writers' last snapshots) and returns them.
func settledEnds(ctx context.Context, addr string, topics []string) (map[string]map[int32]int64, error) {
	var last string
	same := 0
	for {
		ends, err := endOffsets(ctx, addr, topics)
		if err == nil {
			if s := fmt.Sprint(ends); s == last {
				if same++; same >= 4 {
					return ends, nil
				}
			} else {
				last, same = s, 0
			}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}
