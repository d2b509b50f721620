package e2e

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lakegw/lakegw/lake"
	"github.com/lakegw/lakegw/quickstart"
)

// TestPartitionsByKeyHash serves the demo table with 3 partitions: every
// order's changes are in one partition, the one Kafka's default (murmur2)
// partitioner picks for its key, in commit order, and replaying all
// partitions gives the table.
func TestPartitionsByKeyHash(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	cat, err := lake.OpenCatalog(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	demo := quickstart.NewDemo(cat, zerolog.Nop(), quickstart.DemoOptions{Seed: 7})
	var lastSnap int64
	for range 12 {
		if lastSnap, err = demo.Step(ctx); err != nil {
			t.Fatal(err)
		}
	}
	// The demo records its event counts in each snapshot's summary: the
	// number of records the topic must hold.
	tbl, err := cat.LoadTable(ctx, table.Identifier{"demo", "orders"})
	if err != nil {
		t.Fatal(err)
	}
	var want int64
	for _, s := range tbl.Metadata().Snapshots() {
		for _, k := range []string{quickstart.SummaryInserts, quickstart.SummaryUpdates, quickstart.SummaryDeletes} {
			n, _ := strconv.ParseInt(s.Summary.Properties[k], 10, 64)
			want += n
		}
	}

	g := startGateway(t, dir, "", "--partitions", "3")
	adm := kadm.NewClient(mustClient(t, g.addr))
	ends, err := adm.ListEndOffsets(ctx, "demo.orders")
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	assign := map[int32]kgo.Offset{}
	ends.Each(func(o kadm.ListedOffset) {
		total += o.Offset
		assign[o.Partition] = kgo.NewOffset().AtStart()
	})
	if len(assign) != 3 || total != want {
		t.Fatalf("%d partitions holding %d records, want 3 holding %d", len(assign), total, want)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(g.addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"demo.orders": assign}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	recs := consumeN(t, cl, int(total), 30*time.Second)

	part := kgo.StickyKeyPartitioner(nil).ForTopic("demo.orders")
	keyPartition := map[string]int32{}
	next := map[int32]int64{}
	byPartition := map[int32][]*kgo.Record{}
	for _, r := range recs {
		if r.Offset != next[r.Partition] {
			t.Fatalf("partition %d: offset %d, want %d", r.Partition, r.Offset, next[r.Partition])
		}
		next[r.Partition]++
		if p, ok := keyPartition[string(r.Key)]; ok && p != r.Partition {
			t.Fatalf("key %s is in partitions %d and %d", r.Key, p, r.Partition)
		}
		keyPartition[string(r.Key)] = r.Partition
		if p := part.Partition(&kgo.Record{Key: r.Key}, 3); p != int(r.Partition) {
			t.Fatalf("key %s is in partition %d, Kafka's partitioner says %d", r.Key, r.Partition, p)
		}
		byPartition[r.Partition] = append(byPartition[r.Partition], r)
	}
	// Each key's events are all in its partition, in commit order, so
	// replaying partition after partition rebuilds every key.
	live := map[int64]orderState{}
	for p := int32(0); p < 3; p++ {
		for _, r := range byPartition[p] {
			var ev orderEvent
			if err := json.Unmarshal(r.Value, &ev); err != nil {
				t.Fatal(err)
			}
			switch ev.Op {
			case "c", "u":
				live[ev.After.OrderID] = ev.After.orderState
			case "d":
				delete(live, ev.Before.OrderID)
			}
		}
	}
	scanned := scanOrders(t, dir, lastSnap)
	if len(scanned) != len(live) {
		t.Fatalf("replay %d orders, table %d", len(live), len(scanned))
	}
	for id, s := range scanned {
		if got, ok := live[id]; !ok || !sameState(got, s) {
			t.Fatalf("order %d: replay %+v, table %+v", id, got, s)
		}
	}
}
