package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/table"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lakegw/lakegw/lake"
)

// orderState is the part of a demo order the replay is checked on.
type orderState struct {
	Status   string  `json:"status"`
	Quantity int32   `json:"quantity"`
	Customer string  `json:"customer"`
	Note     *string `json:"note"`
}

type orderEvent struct {
	Before *struct {
		OrderID int64 `json:"order_id"`
		orderState
	} `json:"before"`
	After *struct {
		OrderID int64 `json:"order_id"`
		orderState
	} `json:"after"`
	Op string `json:"op"`
}

// scanOrders reads the demo table at a snapshot with iceberg-go: the
// oracle the replayed topic must equal.
func scanOrders(t *testing.T, dataDir string, snapshotID int64) map[int64]orderState {
	t.Helper()
	ctx := context.Background()
	cat, err := lake.OpenCatalog(ctx, dataDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.LoadTable(ctx, table.Identifier{"demo", "orders"})
	if err != nil {
		t.Fatal(err)
	}
	at, err := tbl.Scan(table.WithSnapshotID(snapshotID)).ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	out := map[int64]orderState{}
	tr := array.NewTableReader(at, 1024)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		col := func(name string) int { return rec.Schema().FieldIndices(name)[0] }
		ids := rec.Column(col("order_id")).(*array.Int64)
		status := rec.Column(col("status")).(*array.String)
		qty := rec.Column(col("quantity")).(*array.Int32)
		cust := rec.Column(col("customer")).(*array.String)
		note := rec.Column(col("note")).(*array.String)
		for i := 0; i < int(rec.NumRows()); i++ {
			s := orderState{Status: status.Value(i), Quantity: qty.Value(i), Customer: cust.Value(i)}
			if note.IsValid(i) {
				v := note.Value(i)
				s.Note = &v
			}
			if _, dup := out[ids.Value(i)]; dup {
				t.Fatalf("order %d is live twice at snapshot %d", ids.Value(i), snapshotID)
			}
			out[ids.Value(i)] = s
		}
	}
	return out
}

func sameState(a, b orderState) bool {
	return a.Status == b.Status && a.Quantity == b.Quantity && a.Customer == b.Customer &&
		(a.Note == nil) == (b.Note == nil) && (a.Note == nil || *a.Note == *b.Note)
}

// TestQuickstartChangelogReplaysToTheTable runs the README's quickstart
// and checks that replaying demo.orders from the beginning (inserts,
// updates with their before-images, deletes) gives exactly the table that
// iceberg-go reads at the last replayed snapshot; kcat reads it too.
func TestQuickstartChangelogReplaysToTheTable(t *testing.T) {
	dir := t.TempDir()
	addr := freeAddr(t)
	cmd := exec.Command(lakegwBin, "quickstart", "--data-dir", dir, "--listen", addr, "--demo-interval", "150ms", "--log-format", "json")
	g := &gateway{t: t, cmd: cmd, addr: addr, dataDir: dir, done: make(chan error, 1)}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { g.done <- cmd.Wait() }()
	t.Cleanup(g.stop)
	adm := kadm.NewClient(waitClient(t, addr))
	// Let the demo commit a dozen snapshots or more.
	var end int64
	deadline := time.Now().Add(30 * time.Second)
	for {
		offs, err := adm.ListEndOffsets(context.Background(), "demo.orders")
		if err == nil {
			if o, ok := offs.Lookup("demo.orders", 0); ok && o.Err == nil {
				end = o.Offset
			}
		}
		if end >= 120 || time.Now().After(deadline) {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	if end < 20 {
		t.Fatalf("quickstart topic has only %d records", end)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"demo.orders": {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	recs := consumeN(t, cl, int(end), 30*time.Second)[:end]

	live := map[int64]orderState{}
	ops := map[string]int{}
	for _, r := range recs {
		var ev orderEvent
		if err := json.Unmarshal(r.Value, &ev); err != nil {
			t.Fatalf("offset %d: %v", r.Offset, err)
		}
		ops[ev.Op]++
		switch ev.Op {
		case "c":
			if _, ok := live[ev.After.OrderID]; ok {
				t.Fatalf("offset %d inserts order %d, which is live", r.Offset, ev.After.OrderID)
			}
			live[ev.After.OrderID] = ev.After.orderState
		case "u", "d":
			cur, ok := live[ev.Before.OrderID]
			if !ok || !sameState(cur, ev.Before.orderState) {
				t.Fatalf("offset %d (%s): before-image %+v, but the replayed row is %+v (live %v)", r.Offset, ev.Op, ev.Before.orderState, cur, ok)
			}
			if ev.Op == "u" {
				if ev.After.OrderID != ev.Before.OrderID {
					t.Fatalf("offset %d: update changes the key", r.Offset)
				}
				live[ev.After.OrderID] = ev.After.orderState
			} else {
				delete(live, ev.Before.OrderID)
			}
		default:
			t.Fatalf("offset %d: op %q", r.Offset, ev.Op)
		}
	}
	if ops["u"] == 0 || ops["d"] == 0 || ops["c"] == 0 {
		t.Fatalf("the demo changelog should hold inserts, updates and deletes, got %v", ops)
	}
	lastSnap, _ := strconv.ParseInt(header(recs[len(recs)-1], "lakegw.snapshot-id"), 10, 64)
	want := scanOrders(t, dir, lastSnap)
	if len(want) != len(live) {
		t.Fatalf("replay holds %d orders, the table %d at snapshot %d", len(live), len(want), lastSnap)
	}
	for id, w := range want {
		if got, ok := live[id]; !ok || !sameState(got, w) {
			t.Fatalf("order %d: replay %+v, table %+v", id, got, w)
		}
	}
	t.Logf("replayed %d events %v into %d live orders", len(recs), ops, len(live))

	if _, err := exec.LookPath("kcat"); err != nil {
		skipOrFailMissing(t, "kcat")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "kcat", "-b", addr, "-C", "-t", "demo.orders", "-o", "beginning", "-c", fmt.Sprint(end), "-e", "-q", "-f", "%o %s\n").Output()
	if err != nil {
		t.Fatalf("kcat: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if int64(len(lines)) != end || !strings.HasPrefix(lines[0], "0 {\"before\":null,\"after\":{\"order_id\":1,") {
		t.Fatalf("kcat read %d lines, first %q", len(lines), lines[0])
	}
}

// waitClient returns a client once the gateway answers.
func waitClient(t *testing.T, addr string) *kgo.Client {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
		if err == nil {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			err = cl.Ping(ctx)
			cancel()
			if err == nil {
				t.Cleanup(cl.Close)
				return cl
			}
			cl.Close()
		}
		if time.Now().After(deadline) {
			t.Fatalf("gateway on %s never answered: %v", addr, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
