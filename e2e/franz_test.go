package e2e

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

const topic = "e2e.events"

// debezium is the part of a debezium-json value the tests check.
type debezium struct {
	Before *struct{ ID int64 } `json:"before"`
	After  *struct {
		ID     int64   `json:"id"`
		Name   string  `json:"name"`
		Amount float64 `json:"amount"`
	} `json:"after"`
	Op     string `json:"op"`
	TsMs   int64  `json:"ts_ms"`
	Source struct {
		Table      string `json:"table"`
		SnapshotID int64  `json:"snapshot_id"`
		Sequence   int64  `json:"sequence_number"`
	} `json:"source"`
}

func header(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// checkRecords asserts that recs are exactly the inserts of w's snapshots,
// one record per row, in order, at offsets 0..n-1.
func checkRecords(t *testing.T, w *tableWriter, recs []*kgo.Record) {
	t.Helper()
	type wanted struct {
		r    row
		snap snapshotRows
	}
	var want []wanted
	for _, s := range w.Snaps {
		for _, r := range s.Rows {
			want = append(want, wanted{r, s})
		}
	}
	if len(recs) != len(want) {
		t.Fatalf("got %d records, want %d", len(recs), len(want))
	}
	for i, rec := range recs {
		w := want[i]
		if rec.Offset != int64(i) {
			t.Fatalf("record %d has offset %d", i, rec.Offset)
		}
		var v debezium
		if err := json.Unmarshal(rec.Value, &v); err != nil {
			t.Fatalf("offset %d: value is not JSON: %v: %s", i, err, rec.Value)
		}
		if v.Op != "c" || v.Before != nil || v.After == nil || v.After.ID != w.r.ID || v.After.Name != w.r.Name || v.After.Amount != w.r.Amount {
			t.Fatalf("offset %d: value %s, want insert of %+v", i, rec.Value, w.r)
		}
		if string(rec.Key) != `{"id":`+strconv.FormatInt(w.r.ID, 10)+`}` {
			t.Fatalf("offset %d: key %s", i, rec.Key)
		}
		if rec.Timestamp.UnixMilli() != w.snap.TimestampMs || v.TsMs != w.snap.TimestampMs {
			t.Fatalf("offset %d: timestamp %d / ts_ms %d, want the snapshot commit time %d", i, rec.Timestamp.UnixMilli(), v.TsMs, w.snap.TimestampMs)
		}
		if got := header(rec, "lakegw.snapshot-id"); got != strconv.FormatInt(w.snap.SnapshotID, 10) || v.Source.SnapshotID != w.snap.SnapshotID {
			t.Fatalf("offset %d: snapshot header %q source %d, want %d", i, got, v.Source.SnapshotID, w.snap.SnapshotID)
		}
		if seq := w.snap.SequenceNumber; header(rec, "lakegw.sequence-number") != strconv.FormatInt(seq, 10) || v.Source.Sequence != seq {
			t.Fatalf("offset %d: sequence header %q source %d, want %d", i, header(rec, "lakegw.sequence-number"), v.Source.Sequence, seq)
		}
		if got := header(rec, "lakegw.op"); got != "+I" {
			t.Fatalf("offset %d: op header %q", i, got)
		}
		if v.Source.Table != topic {
			t.Fatalf("offset %d: source table %q", i, v.Source.Table)
		}
	}
}

// consumeN polls cl until it has n records or the timeout passes.
func consumeN(t *testing.T, cl *kgo.Client, n int, timeout time.Duration) []*kgo.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("got %d of %d records before the timeout", len(out), n)
		}
		for _, e := range fs.Errors() {
			t.Fatalf("fetch error on %s/%d: %v", e.Topic, e.Partition, e.Err)
		}
		out = append(out, fs.Records()...)
	}
	return out
}

// setupTable writes three snapshots of different sizes; the largest spans
// several record batches.
func setupTable(t *testing.T, dataDir string) *tableWriter {
	w := newTableWriter(t, dataDir, "e2e", "events")
	w.appendRows(5)
	w.appendRows(2500)
	w.appendRows(7)
	return w
}

func TestFranzAssignedPartitionReadsEveryRecordOnce(t *testing.T) {
	dir := t.TempDir()
	w := setupTable(t, dir)
	g := startGateway(t, dir, "")
	for _, codec := range []string{"none", "zstd"} {
		t.Run(codec, func(t *testing.T) {
			g := g
			if codec != "none" {
				g.stop()
				g = startGateway(t, dir, "", "--compression", codec)
			}
			cl, err := kgo.NewClient(kgo.SeedBrokers(g.addr),
				kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}),
				kgo.FetchMaxBytes(64<<10))
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			checkRecords(t, w, consumeN(t, cl, len(w.allRows()), 30*time.Second))
		})
	}
}

func TestFranzGroupConsumerCommitsAndResumes(t *testing.T) {
	dir := t.TempDir()
	w := setupTable(t, dir)
	g := startGateway(t, dir, "")
	group := "e2e-group"
	newConsumer := func() *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(g.addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DisableAutoCommit())
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	cl := newConsumer()
	recs := consumeN(t, cl, len(w.allRows()), 30*time.Second)
	checkRecords(t, w, recs)
	if err := cl.CommitRecords(context.Background(), recs[len(recs)-1]); err != nil {
		t.Fatalf("commit: %v", err)
	}
	cl.Close() // leaves the group

	adm := kadm.NewClient(mustClient(t, g.addr))
	defer adm.Close()
	offs, err := adm.FetchOffsets(context.Background(), group)
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := offs.Lookup(topic, 0); !ok || o.At != int64(len(recs)) {
		t.Fatalf("committed offset %+v, want %d", o, len(recs))
	}

	// New records after the commit: a consumer of the same group resumes
	// at the committed offset and sees only them.
	more := w.appendRows(3)
	cl2 := newConsumer()
	defer cl2.Close()
	got := consumeN(t, cl2, 3, 30*time.Second)
	for i, r := range got {
		if r.Offset != int64(len(recs)+i) || header(r, "lakegw.snapshot-id") != strconv.FormatInt(more.SnapshotID, 10) {
			t.Fatalf("resumed record %d: offset %d snapshot %s", i, r.Offset, header(r, "lakegw.snapshot-id"))
		}
	}
}

func TestListOffsetsByTimestampLandsOnSnapshot(t *testing.T) {
	dir := t.TempDir()
	w := setupTable(t, dir)
	g := startGateway(t, dir, "")
	adm := kadm.NewClient(mustClient(t, g.addr))
	defer adm.Close()
	ctx := context.Background()
	base := int64(0)
	for _, s := range w.Snaps {
		// Any time after the previous commit and up to this one lands on
		// this snapshot's first record.
		for _, at := range []int64{s.TimestampMs, s.TimestampMs - 1} {
			res, err := adm.ListOffsetsAfterMilli(ctx, at, topic)
			if err != nil {
				t.Fatal(err)
			}
			lo, ok := res.Lookup(topic, 0)
			if !ok || lo.Err != nil {
				t.Fatalf("list offsets at %d: %+v", at, lo)
			}
			if lo.Offset != base && !(at == s.TimestampMs-1 && lo.Timestamp < s.TimestampMs) {
				t.Fatalf("list offsets at %d = %d (ts %d), want %d (snapshot %d)", at, lo.Offset, lo.Timestamp, base, s.SnapshotID)
			}
		}
		base += int64(len(s.Rows))
	}
	end, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if lo, _ := end.Lookup(topic, 0); lo.Offset != base {
		t.Fatalf("end offset %d, want %d", lo.Offset, base)
	}
	start, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	if lo, _ := start.Lookup(topic, 0); lo.Offset != 0 {
		t.Fatalf("start offset %d, want 0", lo.Offset)
	}
}

func mustClient(t *testing.T, addr string) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// consumeAll reads n records of partition 0 from the start.
func consumeAll(t *testing.T, addr string, n int) []*kgo.Record {
	t.Helper()
	return consumeAllOf(t, addr, topic, n)
}

// consumeAllOf reads n records of partition 0 of a topic from the start.
func consumeAllOf(t *testing.T, addr, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	return consumeN(t, cl, n, 30*time.Second)
}
