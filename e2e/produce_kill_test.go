package e2e

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// kill9 ends the gateway with SIGKILL, as a crash does: nothing of it
// runs after.
func (g *gateway) kill9() {
	if g.cmd.ProcessState != nil {
		return
	}
	_ = g.cmd.Process.Kill()
	select {
	case <-g.done:
	case <-time.After(10 * time.Second):
		g.t.Fatalf("lakegw pid %d still running 10s after SIGKILL", g.cmd.Process.Pid)
	}
}

// Idempotent producers keep producing while the gateway is killed with
// SIGKILL again and again and restarted on the same data directory: every
// acknowledged record is read back exactly once and no record twice.
func TestProduceSurvivesKill9WithoutLossOrDuplicates(t *testing.T) {
	kills := 20
	if testing.Short() {
		kills = 5
	}
	dir := t.TempDir()
	addr := freeAddr(t)
	g := startGateway(t, dir, addr, "--commit-interval", "30ms")
	const topic, partitions = "crashy", 2
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	adm := kadm.NewClient(mustClient(t, addr))
	if resp, err := adm.CreateTopics(ctx, partitions, 1, nil, topic); err != nil || resp[topic].Err != nil {
		t.Fatalf("create topic: %v %v", err, resp[topic].Err)
	}

	var (
		mu    sync.Mutex
		acked = map[string]bool{}
		sent  int
	)
	prodCtx, stopProducing := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DefaultProduceTopic(topic),
				kgo.ProducerLinger(2*time.Millisecond), kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }))
			if err != nil {
				t.Error(err)
				return
			}
			defer cl.Close()
			for i := 0; prodCtx.Err() == nil; i++ {
				v := fmt.Sprintf("w%d-%d", w, i)
				mu.Lock()
				sent++
				mu.Unlock()
				cl.Produce(prodCtx, &kgo.Record{Key: []byte(strconv.Itoa(i)), Value: []byte(v)}, func(r *kgo.Record, err error) {
					if err == nil {
						mu.Lock()
						acked[string(r.Value)] = true
						mu.Unlock()
					}
				})
				if i%50 == 49 {
					time.Sleep(5 * time.Millisecond) // keep the buffer from filling while the gateway is down
				}
			}
			// Whatever is buffered still goes out, or fails, before close.
			flushCtx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			_ = cl.Flush(flushCtx)
		}()
	}
	for k := range kills {
		time.Sleep(time.Duration(300+k*37%400) * time.Millisecond)
		g.kill9()
		g = startGateway(t, dir, addr, "--commit-interval", "30ms")
	}
	time.Sleep(500 * time.Millisecond)
	stopProducing()
	wg.Wait()

	mu.Lock()
	defer mu.Unlock()
	if len(acked) < 100 {
		t.Fatalf("only %d records acknowledged of %d sent over %d kills: the producers made no progress", len(acked), sent, kills)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
	cons, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	seen := map[string]int{}
	var read int64
	for read < total {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("consume after %d of %d records: %v", read, total, err)
		}
		fs.EachRecord(func(r *kgo.Record) { seen[string(r.Value)]++; read++ })
	}
	var lost, dup []string
	for v := range acked {
		if seen[v] == 0 {
			lost = append(lost, v)
		}
	}
	for v, n := range seen {
		if n > 1 {
			dup = append(dup, v)
		}
	}
	t.Logf("%d kills: %d records sent, %d acknowledged, %d in the topic, lost %d, duplicated %d", kills, sent, len(acked), total, len(lost), len(dup))
	if len(lost) > 0 || len(dup) > 0 {
		t.Fatalf("lost %d acknowledged records (%s) and duplicated %d (%s)", len(lost), first(lost), len(dup), first(dup))
	}
}

func first(vs []string) string {
	if len(vs) > 5 {
		vs = vs[:5]
	}
	return strings.Join(vs, ", ")
}
