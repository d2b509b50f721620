package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"strconv"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lakegw/lakegw/changelog"
	"github.com/lakegw/lakegw/quickstart"
)

// TestStoppedGroupResumesPastTheDemoRetention: a consumer group of the
// quickstart demo (a merge-on-read table lakegw maintains, set to keep 10
// snapshots) commits and stops; the demo commits on and serve's background
// maintenance expires the table down to its 10 snapshots, while the
// group's committed offset holds the snapshots after it in the table's
// pinned log instead of its metadata file. Resumed, the group reads every
// change from its committed offset on, with no truncation and no
// compacted-prefix record, and its copy of the table equals the demo's own
// model.
func TestStoppedGroupResumesPastTheDemoRetention(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cat, d := shortHistoryDemo(t, dir)
	var lastID int64
	ids := map[int64]int{} // snapshot id -> burst of commits
	burst := 0
	step := func(n int) {
		t.Helper()
		for range n {
			id, err := d.Step(ctx)
			if err != nil {
				t.Fatal(err)
			}
			lastID, ids[id] = id, burst
		}
	}
	step(5)
	g := startGateway(t, dir, "", "--maintain-interval", "300ms")
	const group = "pinned-demo"
	topicName := quickstart.DefaultTableName
	adm := kadm.NewClient(mustClient(t, g.addr))
	endOffset := func() int64 {
		t.Helper()
		ends, err := adm.ListEndOffsets(ctx, topicName)
		if err != nil {
			t.Fatal(err)
		}
		o, _ := ends.Lookup(topicName, 0)
		return o.Offset
	}
	waitEnd := func(atLeast int64) int64 {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			if e := endOffset(); e >= atLeast && e > 0 {
				return e
			}
			if time.Now().After(deadline) {
				t.Fatalf("end offset stayed below %d\nlogs:\n%s", atLeast, g.Logs())
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	newConsumer := func() *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(g.addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topicName),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	mat := map[int64]demoRow{}
	apply := func(recs []*kgo.Record) {
		t.Helper()
		for _, r := range recs {
			v := demoImage(t, r)
			switch {
			case v.Op == "d":
				delete(mat, v.Before.OrderID)
			case v.Op == "r":
				t.Fatalf("offset %d is a compacted-prefix record: the resumed group lost history", r.Offset)
			default:
				mat[v.After.OrderID] = *v.After
			}
		}
	}

	cl := newConsumer()
	first := consumeN(t, cl, int(waitEnd(1)), 30*time.Second)
	apply(first)
	if err := cl.CommitRecords(ctx, first[len(first)-1]); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	committed := first[len(first)-1].Offset + 1

	// The demo goes on; maintenance expires the table to its own
	// retention and logs what the group still needs. (A committed offset
	// pins the snapshot indexed at it: the group's pin begins once the
	// gateway indexed the next snapshot.)
	step(1)
	waitEnd(committed + 1)
	// Two bursts, each more than the pin's one-second slack after what
	// came before, so that a group reading on into the second lets go of
	// what it read before.
	time.Sleep(1500 * time.Millisecond)
	step(30)
	time.Sleep(1500 * time.Millisecond)
	burst++
	step(30)
	var (
		logged int
		before int64 // the log's first sequence number
	)
	deadline := time.Now().Add(60 * time.Second)
	for {
		if tbl, l := demoPinnedLog(t, cat); len(tbl.Metadata().Snapshots()) <= 12 {
			if logged = l.Len(); logged >= 50 {
				before = l.Snapshots[0].SequenceNumber
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the table was not expired to its retention with the pinned snapshots logged (%d logged)\nlogs:\n%s", logged, g.Logs())
		}
		time.Sleep(200 * time.Millisecond)
	}
	// A restarted gateway has no derived snapshot cached: what the group
	// reads now is derived from the files the pinned log kept.
	g.stop()
	g = startGateway(t, dir, g.addr, "--maintain-interval", "300ms")

	// The group reads on into the second burst, commits and stops again.
	cl = newConsumer()
	var part []*kgo.Record
	for len(part) == 0 || ids[snapshotOf(t, part[len(part)-1])] != burst {
		for _, r := range consumeN(t, cl, 1, 30*time.Second) {
			if len(part) == 0 || ids[snapshotOf(t, part[len(part)-1])] != burst {
				part = append(part, r)
			}
		}
	}
	if part[0].Offset != committed {
		t.Fatalf("the resumed group starts at offset %d, it committed %d", part[0].Offset, committed)
	}
	apply(part)
	// The first record of the second burst is the next to read.
	part = part[:len(part)-1]
	if err := cl.CommitRecords(ctx, part[len(part)-1]); err != nil {
		t.Fatal(err)
	}
	cl.Close()
	committed = part[len(part)-1].Offset + 1

	// The next passes let go of what the group read, and keep the rest.
	firstLogged := func() int64 {
		t.Helper()
		_, l := demoPinnedLog(t, cat)
		if l.Len() == 0 {
			t.Fatalf("the pinned log went while the group still needs it\nlogs:\n%s", g.Logs())
		}
		return l.Snapshots[0].SequenceNumber
	}
	step(3)
	for deadline := time.Now().Add(30 * time.Second); firstLogged() == before; {
		if time.Now().After(deadline) {
			t.Fatalf("the pinned log did not let go of what the group read\nlogs:\n%s", g.Logs())
		}
		time.Sleep(200 * time.Millisecond)
	}

	// Up to the end of the demo's last commit, once the gateway indexed
	// it.
	readToEnd := func(cl *kgo.Client) []*kgo.Record {
		t.Helper()
		var out []*kgo.Record
		for seen := false; !seen || out[len(out)-1].Offset+1 < endOffset(); {
			recs := consumeN(t, cl, 1, 30*time.Second)
			for _, r := range recs {
				seen = seen || header(r, "lakegw.snapshot-id") == strconv.FormatInt(lastID, 10)
			}
			out = append(out, recs...)
		}
		return out
	}
	cl = newConsumer()
	defer cl.Close()
	rest := readToEnd(cl)
	if rest[0].Offset != committed {
		t.Fatalf("the group resumes at offset %d, it committed %d", rest[0].Offset, committed)
	}
	apply(rest)
	requireDemoRows(t, "the resumed group's copy", mat, d.Expected())

	// From the log start, a new consumer gets the whole table: the live
	// rows of the oldest snapshot kept, then every change.
	fresh, err := kgo.NewClient(kgo.SeedBrokers(g.addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topicName: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer fresh.Close()
	all := map[int64]demoRow{}
	for _, r := range readToEnd(fresh) {
		if v := demoImage(t, r); v.Op == "d" {
			delete(all, v.Before.OrderID)
		} else {
			all[v.After.OrderID] = *v.After
		}
	}
	requireDemoRows(t, "a replay from the log start", all, d.Expected())
	t.Logf("%d snapshots logged for the group; it read %d records, then %d", logged, len(part), len(rest))
}

func snapshotOf(t *testing.T, r *kgo.Record) int64 {
	t.Helper()
	id, err := strconv.ParseInt(header(r, "lakegw.snapshot-id"), 10, 64)
	if err != nil {
		t.Fatalf("offset %d: snapshot id header: %v", r.Offset, err)
	}
	return id
}

func requireDemoRows(t *testing.T, what string, got map[int64]demoRow, want map[int64]quickstart.Order) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s has %d orders, the demo %d", what, len(got), len(want))
	}
	for id, o := range want {
		r, ok := got[id]
		if !ok || r.Customer != o.Customer || r.Status != o.Status || r.Quantity != o.Quantity || (r.Note == nil) != (o.Note == nil) {
			t.Fatalf("%s: order %d is %+v (present %v), the demo's %+v", what, id, r, ok, o)
		}
	}
}

// demoPinnedLog loads the demo table and the pinned log it names (nil:
// none).
func demoPinnedLog(t *testing.T, cat catalog.Catalog) (*table.Table, *changelog.PinnedLog) {
	t.Helper()
	ctx := context.Background()
	for attempt := 1; ; attempt++ {
		tbl, err := cat.LoadTable(ctx, quickstart.DefaultTable())
		if err != nil {
			t.Fatal(err)
		}
		p := tbl.Properties()[changelog.PropPinnedLog]
		if p == "" {
			return tbl, nil
		}
		fsys, err := tbl.FS(ctx)
		if err != nil {
			t.Fatal(err)
		}
		l, err := changelog.ReadPinnedLog(fsys, p)
		if errors.Is(err, fs.ErrNotExist) && attempt < 10 {
			// Maintenance replaced the log (and removed this one)
			// between the load and the read: look again.
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		return tbl, l
	}
}

// demoImage decodes a debezium-json record of the demo topic.
func demoImage(t *testing.T, r *kgo.Record) (v struct {
	Op     string   `json:"op"`
	Before *demoRow `json:"before"`
	After  *demoRow `json:"after"`
}) {
	t.Helper()
	if err := json.Unmarshal(r.Value, &v); err != nil {
		t.Fatalf("offset %d: %v", r.Offset, err)
	}
	return v
}

// demoRow is what the demo test compares of an order's record image.
type demoRow struct {
	OrderID  int64   `json:"order_id"`
	Customer string  `json:"customer"`
	Status   string  `json:"status"`
	Quantity int32   `json:"quantity"`
	Note     *string `json:"note"`
}
