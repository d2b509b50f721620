package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/table"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lakegw/lakegw/lake"
)

// producedRecord is what a test produced and expects back.
type producedRecord struct {
	partition int32
	offset    int64
	key       []byte
	value     []byte
	headers   []kgo.RecordHeader
	ts        time.Time
}

// rawRecords builds n records spread over partitions by index, with and
// without keys, values and headers (null and empty both).
func rawRecords(topic string, n, partitions int, round int) []*kgo.Record {
	out := make([]*kgo.Record, n)
	for i := range out {
		r := &kgo.Record{Topic: topic, Partition: int32(i % partitions),
			Timestamp: time.UnixMilli(1_700_000_000_000 + int64(round*n+i)*7)}
		switch i % 5 {
		case 0: // null key
			r.Value = []byte(fmt.Sprintf(`{"round":%d,"i":%d}`, round, i))
		case 1: // tombstone
			r.Key = []byte(fmt.Sprintf("k%d", i))
		case 2: // empty key and value, a header with a null value
			r.Key, r.Value = []byte{}, []byte{}
			r.Headers = []kgo.RecordHeader{{Key: "nil-value"}}
		default:
			r.Key = []byte(fmt.Sprintf("k%d", i))
			r.Value = bytes.Repeat([]byte{byte(i), 0, 0xff}, i%40)
			r.Headers = []kgo.RecordHeader{{Key: "trace", Value: []byte(fmt.Sprint(round, "-", i))}, {Key: "empty", Value: []byte{}}}
		}
		out[i] = r
	}
	return out
}

func sameBytes(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }

// A topic created through CreateTopics takes records from an idempotent
// producer and a consumer from earliest reads back exactly what was
// produced: partitions, offsets, keys, values (null and empty apart),
// headers and timestamps.
func TestProducedRecordsReadBackExactly(t *testing.T) {
	dir := t.TempDir()
	g := startGateway(t, dir, "", "--commit-interval", "50ms")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const topic, partitions = "clicks", 3
	adm := kadm.NewClient(mustClient(t, g.addr))
	resp, err := adm.CreateTopics(ctx, partitions, 1, nil, topic)
	if err != nil || resp[topic].Err != nil {
		t.Fatalf("create topic: %v %v", err, resp[topic].Err)
	}
	again, err := adm.CreateTopics(ctx, partitions, 1, nil, topic)
	if err != nil || again[topic].Err != kerr.TopicAlreadyExists {
		t.Fatalf("second create: %v %v, want TOPIC_ALREADY_EXISTS", err, again[topic].Err)
	}
	prod, err := kgo.NewClient(kgo.SeedBrokers(g.addr), kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	var want []producedRecord
	for round := range 3 {
		recs := rawRecords(topic, 100, partitions, round)
		if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce round %d: %v", round, err)
		}
		for _, r := range recs {
			want = append(want, producedRecord{partition: r.Partition, offset: r.Offset, key: r.Key, value: r.Value, headers: r.Headers, ts: r.Timestamp})
		}
	}
	next := map[int32]int64{}
	for _, w := range want {
		if w.offset != next[w.partition] {
			t.Fatalf("partition %d: produce acknowledged offset %d, want %d (dense, in order)", w.partition, w.offset, next[w.partition])
		}
		next[w.partition]++
	}

	cons, err := kgo.NewClient(kgo.SeedBrokers(g.addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	got := map[[2]int64]*kgo.Record{}
	for len(got) < len(want) {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("consume after %d records: %v", len(got), err)
		}
		fs.EachRecord(func(r *kgo.Record) { got[[2]int64{int64(r.Partition), r.Offset}] = r })
	}
	for _, w := range want {
		r := got[[2]int64{int64(w.partition), w.offset}]
		if r == nil {
			t.Fatalf("partition %d offset %d not read back", w.partition, w.offset)
		}
		if !sameBytes(r.Key, w.key) || !sameBytes(r.Value, w.value) || !r.Timestamp.Equal(w.ts) || len(r.Headers) != len(w.headers) {
			t.Fatalf("partition %d offset %d: read key %q value %q ts %v headers %v, produced key %q value %q ts %v headers %v",
				w.partition, w.offset, r.Key, r.Value, r.Timestamp, r.Headers, w.key, w.value, w.ts, w.headers)
		}
		for i, h := range w.headers {
			if r.Headers[i].Key != h.Key || !sameBytes(r.Headers[i].Value, h.Value) {
				t.Fatalf("partition %d offset %d header %d: read %+v, produced %+v", w.partition, w.offset, i, r.Headers[i], h)
			}
		}
	}
	// The high watermarks are the produced counts.
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(o kadm.ListedOffset) {
		if o.Offset != next[o.Partition] {
			t.Fatalf("partition %d: high watermark %d, want %d", o.Partition, o.Offset, next[o.Partition])
		}
	})

	// A raw topic keeps every record, and says so.
	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range rc.Configs {
		if (c.Key == "retention.ms" || c.Key == "retention.bytes") && c.MaybeValue() != "-1" {
			t.Fatalf("%s = %q, want -1", c.Key, c.MaybeValue())
		}
	}
	if resp, err := adm.CreateTopics(ctx, 1, 1, map[string]*string{"retention.ms": kadm.StringPtr("1000")}, "short_lived"); err != nil || resp["short_lived"].Err != kerr.InvalidConfig {
		t.Fatalf("a raw topic with retention.ms=1000: %v %v, want INVALID_CONFIG", err, resp["short_lived"].Err)
	}

	// After a restart the same records are served at the same offsets.
	g.stop()
	g2 := startGateway(t, dir, "")
	again2 := consumeAllOf(t, g2.addr, topic, int(next[0]))
	for _, r := range again2 {
		w := got[[2]int64{0, r.Offset}]
		if !sameBytes(r.Value, w.Value) || !sameBytes(r.Key, w.Key) {
			t.Fatalf("after restart partition 0 offset %d: %q, before %q", r.Offset, r.Value, w.Value)
		}
	}
}

// A table other engines write stays read-only: producing to its topic
// fails with a message that says why, and creating a table topic is
// refused until table topics exist.
func TestProduceToReadOnlyTopicIsRefused(t *testing.T) {
	dir := t.TempDir()
	setupTable(t, dir)
	g := startGateway(t, dir, "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	prod, err := kgo.NewClient(kgo.SeedBrokers(g.addr), kgo.RecordRetries(1))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	err = prod.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("x")}).FirstErr()
	if !errors.Is(err, kerr.PolicyViolation) {
		t.Fatalf("produce to a read-only topic: %v, want POLICY_VIOLATION", err)
	}
	adm := kadm.NewClient(mustClient(t, g.addr))
	resp, err := adm.CreateTopics(ctx, 1, 1, map[string]*string{"lakegw.primary-key": kadm.StringPtr("id")}, "pk_topic")
	if err != nil || resp["pk_topic"].Err != kerr.InvalidConfig {
		t.Fatalf("create table topic: %v %v, want INVALID_CONFIG", err, resp["pk_topic"].Err)
	}
}

// A raw topic keeps every record at its offset when maintenance expires
// the snapshots that added them: a consumer from earliest still reads the
// whole topic (its compacted prefix is the records themselves), and one
// mid-way reads on without a record twice.
func TestProducedRecordsOutliveSnapshotExpiry(t *testing.T) {
	dir := t.TempDir()
	g := startGateway(t, dir, "", "--commit-interval", "20ms", "--maintain-interval", "300ms")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const topic, partitions = "expiring", 2
	adm := kadm.NewClient(mustClient(t, g.addr))
	if resp, err := adm.CreateTopics(ctx, partitions, 1, nil, topic); err != nil || resp[topic].Err != nil {
		t.Fatalf("create topic: %v %v", err, resp[topic].Err)
	}
	cat, err := lake.OpenCatalog(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	ident := table.Identifier{lake.BareNamespace, topic}
	prod, err := kgo.NewClient(kgo.SeedBrokers(g.addr), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	var produced []*kgo.Record
	for round := range 30 {
		recs := rawRecords(topic, 40, partitions, round)
		for _, r := range recs {
			r.Partition = 0
		}
		if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		produced = append(produced, recs...)
	}
	// A consumer reads the first rounds before the expiry, the rest after.
	mid, err := kgo.NewClient(kgo.SeedBrokers(g.addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}), kgo.FetchMaxBytes(2000))
	if err != nil {
		t.Fatal(err)
	}
	defer mid.Close()
	midRead := consumeN(t, mid, 100, 30*time.Second)
	if len(midRead) >= len(produced)*3/4 {
		t.Fatalf("the consumer read %d of %d records before the expiry: it must stop early to read across it", len(midRead), len(produced))
	}
	// Only now may maintenance expire the snapshots (a raw topic keeps
	// two minutes of them by default).
	setTableProps(t, cat, ident, map[string]string{table.MinSnapshotsToKeepKey: "2", table.MaxSnapshotAgeMsKey: "1"})
	// Wait until maintenance has expired the snapshots of most rounds.
	deadline := time.Now().Add(30 * time.Second)
	for {
		tbl, err := cat.LoadTable(ctx, ident)
		if err != nil {
			t.Fatal(err)
		}
		if n := len(tbl.Metadata().Snapshots()); n <= 4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the table still has %d snapshots: maintenance expired none\n%s", len(tbl.Metadata().Snapshots()), g.Logs())
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, off := range []int64{0, 200, 240, 1000} {
				p := rawFetch(t, mustClient(t, g.addr), topic, off, 12)
				var rb kmsg.RecordBatch
				_ = rb.ReadFrom(p.RecordBatches)
				t.Logf("DEBUG fetch %d: err %d hw %d bytes %d first batch base %d epoch %d last delta %d", off, p.ErrorCode, p.HighWatermark, len(p.RecordBatches), rb.FirstOffset, rb.PartitionLeaderEpoch, rb.LastOffsetDelta)
			}
			for _, l := range strings.Split(g.Logs(), "\n") {
				if strings.Contains(l, `"level":"warn"`) || strings.Contains(l, `"level":"error"`) || strings.Contains(l, "prefix") || strings.Contains(l, "rror") {
					t.Log(l)
				}
			}
		}
	})
	got := consumeAllOf(t, g.addr, topic, len(produced))
	for i, r := range got {
		w := produced[i]
		if r.Offset != w.Offset || !sameBytes(r.Key, w.Key) || !sameBytes(r.Value, w.Value) || !r.Timestamp.Equal(w.Timestamp) {
			t.Fatalf("after expiry, record %d: offset %d key %q value %q, produced offset %d key %q value %q",
				i, r.Offset, r.Key, r.Value, w.Offset, w.Key, w.Value)
		}
	}
	for len(midRead) < len(produced) {
		midRead = append(midRead, consumeN(t, mid, 1, 30*time.Second)...)
	}
	for i, r := range midRead {
		if r.Offset != int64(i) {
			t.Fatalf("the consumer reading across the expiry read offset %d as its record %d: records were read twice or skipped", r.Offset, i)
		}
	}
	// Restarted, the gateway rebuilds the same offsets from the table.
	g.stop()
	g2 := startGateway(t, dir, "")
	again := consumeAllOf(t, g2.addr, topic, len(produced))
	if again[len(again)-1].Offset != produced[len(produced)-1].Offset || !sameBytes(again[7].Value, produced[7].Value) {
		t.Fatalf("after restart: last offset %d, want %d", again[len(again)-1].Offset, produced[len(produced)-1].Offset)
	}
}

// Maintenance merges a raw topic's small files (one per partition per
// commit) while producers keep writing, and every record stays where it
// was.
func TestProducedSmallFilesAreMerged(t *testing.T) {
	dir := t.TempDir()
	g := startGateway(t, dir, "", "--commit-interval", "10ms", "--maintain-interval", "500ms")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const topic = "merged"
	createRawTopic(t, g.addr, topic, 1)
	prod, err := kgo.NewClient(kgo.SeedBrokers(g.addr), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	var produced []*kgo.Record
	for round := range 60 {
		recs := rawRecords(topic, 20, 1, round)
		if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		produced = append(produced, recs...)
	}
	cat, err := lake.OpenCatalog(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Producing goes on while maintenance merges.
	more := make(chan error, 1)
	go func() {
		for round := 60; round < 120; round++ {
			recs := rawRecords(topic, 20, 1, round)
			if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
				more <- err
				return
			}
			produced = append(produced, recs...)
			time.Sleep(20 * time.Millisecond)
		}
		more <- nil
	}()
	merged := false
	for deadline := time.Now().Add(30 * time.Second); !merged && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		merged = strings.Contains(g.Logs(), "merged a raw topic's small files")
	}
	if err := <-more; err != nil {
		t.Fatal(err)
	}
	if !merged {
		t.Fatalf("maintenance merged no small files\n%s", tail(g.Logs(), 3000))
	}
	tbl, err := cat.LoadTable(ctx, table.Identifier{lake.BareNamespace, topic})
	if err != nil {
		t.Fatal(err)
	}
	files, _ := strconv.Atoi(tbl.CurrentSnapshot().Summary.Properties["total-data-files"])
	if files >= 100 {
		t.Fatalf("%d data files after merging 120 commits' worth", files)
	}
	got := consumeAllOf(t, g.addr, topic, len(produced))
	for i, r := range got {
		w := produced[i]
		if r.Offset != int64(i) || !sameBytes(r.Key, w.Key) || !sameBytes(r.Value, w.Value) || !r.Timestamp.Equal(w.Timestamp) {
			t.Fatalf("after merging, offset %d: key %q value %q, produced key %q value %q", r.Offset, r.Key, r.Value, w.Key, w.Value)
		}
	}
	t.Logf("%d records in %d data files after merging", len(produced), files)
}

// A table topic made by CreateTopics (lakegw.schema, lakegw.primary-key,
// lakegw.format=upsert) takes what Flink's upsert-kafka sink writes, and a
// consumer of the topic reads the table's changelog: replaying it gives
// the rows the producer left, which an Iceberg scan of the table also
// holds. A record that does not fit the schema fails its batch with
// INVALID_RECORD.
func TestTableTopicTakesUpserts(t *testing.T) {
	dir := t.TempDir()
	g := startGateway(t, dir, "", "--commit-interval", "20ms")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const topic = "kv.users"
	adm := kadm.NewClient(mustClient(t, g.addr))
	cfg := map[string]*string{"lakegw.schema": kadm.StringPtr("id long, name string, score int"),
		"lakegw.primary-key": kadm.StringPtr("id"), "lakegw.format": kadm.StringPtr("upsert")}
	if resp, err := adm.CreateTopics(ctx, 2, 1, cfg, topic); err != nil || resp[topic].Err != nil {
		t.Fatalf("create table topic: %v %v", err, resp[topic].Err)
	}
	prod, err := kgo.NewClient(kgo.SeedBrokers(g.addr), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	want := map[int64]string{}
	for round := range 5 {
		var recs []*kgo.Record
		for id := int64(0); id < 40; id++ {
			key := []byte(fmt.Sprintf(`{"id":%d}`, id))
			switch {
			case (id+int64(round))%7 == 0:
				recs = append(recs, &kgo.Record{Key: key}) // delete
				delete(want, id)
			default:
				v := fmt.Sprintf(`{"id":%d,"name":"n%d-%d","score":%d}`, id, id, round, round)
				recs = append(recs, &kgo.Record{Key: key, Value: []byte(v)})
				want[id] = fmt.Sprintf("n%d-%d", id, round)
			}
		}
		if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
	}
	bad := prod.ProduceSync(ctx, &kgo.Record{Key: []byte(`{"id":99}`), Value: []byte(`{"id":99,"score":"lots"}`)}).FirstErr()
	if !errors.Is(bad, kerr.InvalidRecord) {
		t.Fatalf("a record that does not fit: %v, want INVALID_RECORD", bad)
	}

	// Replay the changelog (upsert: key, value or tombstone) of every
	// partition up to the end offsets listed right after the last
	// acknowledgement: acknowledged means served, so they hold every
	// acknowledged write.
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
	cons, err := kgo.NewClient(kgo.SeedBrokers(g.addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	got := map[int64]string{}
	var read int64
	for read < total {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("consume after %d of %d: %v", read, total, err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			read++
			var k struct{ ID int64 }
			if err := json.Unmarshal(r.Key, &k); err != nil {
				t.Fatalf("changelog key %q: %v", r.Key, err)
			}
			if r.Value == nil {
				delete(got, k.ID)
				return
			}
			var v struct{ Name string }
			if err := json.Unmarshal(r.Value, &v); err != nil {
				t.Fatalf("changelog value %q: %v", r.Value, err)
			}
			got[k.ID] = v.Name
		})
	}
	if len(got) != len(want) {
		t.Fatalf("the changelog replays to %d rows, the producer left %d", len(got), len(want))
	}
	for id, name := range want {
		if got[id] != name {
			t.Fatalf("id %d: changelog says %q, produced %q", id, got[id], name)
		}
	}
	// Any Iceberg reader sees the same table.
	cat, err := lake.OpenCatalog(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.LoadTable(ctx, table.Identifier{"kv", "users"})
	if err != nil {
		t.Fatal(err)
	}
	_, itr, err := tbl.Scan().ToArrowRecords(ctx)
	if err != nil {
		t.Fatal(err)
	}
	scanned := map[int64]string{}
	for rec, err := range itr {
		if err != nil {
			t.Fatal(err)
		}
		ids, names := rec.Column(0).(*array.Int64), rec.Column(1).(*array.String)
		for i := 0; i < int(rec.NumRows()); i++ {
			scanned[ids.Value(i)] = names.Value(i)
		}
		rec.Release()
	}
	if len(scanned) != len(want) {
		t.Fatalf("an Iceberg scan holds %d rows, the producer left %d", len(scanned), len(want))
	}
	for id, name := range want {
		if scanned[id] != name {
			t.Fatalf("id %d: scan says %q, produced %q", id, scanned[id], name)
		}
	}
}

// DeleteTopics is off unless --allow-delete-topics; then it drops a raw
// topic's table (and the topic goes), never a table other engines write.
// An acks=0 producer gets no answers and its records are still written.
func TestDeleteTopicsAndAcksZero(t *testing.T) {
	dir := t.TempDir()
	setupTable(t, dir)
	g := startGateway(t, dir, "", "--commit-interval", "20ms")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	createRawTopic(t, g.addr, "doomed", 1)
	adm := kadm.NewClient(mustClient(t, g.addr))
	resp, err := adm.DeleteTopics(ctx, "doomed")
	if err != nil || resp["doomed"].Err != kerr.TopicDeletionDisabled {
		t.Fatalf("delete without --allow-delete-topics: %v %v, want TOPIC_DELETION_DISABLED", err, resp["doomed"].Err)
	}

	// acks=0 (idempotence needs acks=all, so it is off).
	fire, err := kgo.NewClient(kgo.SeedBrokers(g.addr), kgo.DefaultProduceTopic("doomed"), kgo.RequiredAcks(kgo.NoAck()),
		kgo.DisableIdempotentWrite())
	if err != nil {
		t.Fatal(err)
	}
	defer fire.Close()
	for i := range 50 {
		fire.Produce(ctx, &kgo.Record{Value: []byte(strconv.Itoa(i))}, nil)
	}
	if err := fire.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	got := consumeAllOf(t, g.addr, "doomed", 50)
	for i, r := range got[:50] {
		if string(r.Value) != strconv.Itoa(i) || r.Offset != int64(i) {
			t.Fatalf("acks=0 record %d: offset %d value %q", i, r.Offset, r.Value)
		}
	}

	g.stop()
	g = startGateway(t, dir, "", "--allow-delete-topics")
	adm = kadm.NewClient(mustClient(t, g.addr))
	if resp, err := adm.DeleteTopics(ctx, topic); err != nil || resp[topic].Err != kerr.PolicyViolation {
		t.Fatalf("delete of a table lakegw does not write: %v %v, want POLICY_VIOLATION", err, resp[topic].Err)
	}
	if resp, err := adm.DeleteTopics(ctx, "doomed"); err != nil || resp["doomed"].Err != nil {
		t.Fatalf("delete: %v %v", err, resp["doomed"].Err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		md, err := adm.Metadata(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !md.Topics.Has("doomed") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the deleted topic is still served")
		}
	}
	cat, err := lake.OpenCatalog(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cat.LoadTable(ctx, table.Identifier{lake.BareNamespace, "doomed"}); err == nil {
		t.Fatal("the deleted topic's table is still in the catalog")
	}
}

// CreatePartitions grows a raw topic: the records of the existing
// partitions stay at their offsets (a consumer reads on without a record
// twice), new records go to the new partition, and a table topic's
// partitions cannot change.
func TestRawTopicGrowsPartitions(t *testing.T) {
	dir := t.TempDir()
	g := startGateway(t, dir, "", "--commit-interval", "20ms")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const topic = "growing"
	createRawTopic(t, g.addr, topic, 2)
	prod, err := kgo.NewClient(kgo.SeedBrokers(g.addr), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	first := rawRecords(topic, 40, 2, 0)
	if err := prod.ProduceSync(ctx, first...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	mid, err := kgo.NewClient(kgo.SeedBrokers(g.addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer mid.Close()
	read := consumeN(t, mid, 20, 30*time.Second)

	adm := kadm.NewClient(mustClient(t, g.addr))
	if resp, err := adm.CreatePartitions(ctx, 1, topic); err != nil || resp[topic].Err != nil {
		t.Fatalf("create partitions: %v %v", err, resp[topic].Err)
	}
	deadline := time.Now().Add(15 * time.Second)
	for {
		md, err := adm.Metadata(ctx, topic)
		if err != nil {
			t.Fatal(err)
		}
		if len(md.Topics[topic].Partitions) == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the topic still has %d partitions\n%s", len(md.Topics[topic].Partitions), tail(g.Logs(), 3000))
		}
		time.Sleep(100 * time.Millisecond)
	}
	second := rawRecords(topic, 30, 3, 1)
	prod2, err := kgo.NewClient(kgo.SeedBrokers(g.addr), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod2.Close()
	if err := prod2.ProduceSync(ctx, second...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	for _, r := range second {
		if r.Partition == 2 && (r.Offset < 0 || r.Offset >= 10) {
			t.Fatalf("record in the new partition at offset %d, want 0..9", r.Offset)
		}
	}
	// The consumer of partition 0 reads on across the growth.
	want := 20 + 10
	for len(read) < want {
		read = append(read, consumeN(t, mid, 1, 30*time.Second)...)
	}
	for i, r := range read {
		if r.Offset != int64(i) {
			t.Fatalf("partition 0 read offset %d as its record %d across the growth", r.Offset, i)
		}
	}
	got := map[int32]int{}
	all := consumeAllOfPartitions(t, g.addr, topic, 3, 70)
	for _, r := range all {
		got[r.Partition]++
	}
	if got[0] != 30 || got[1] != 30 || got[2] != 10 {
		t.Fatalf("records per partition %v, want 30 30 10", got)
	}
	cfg := map[string]*string{"lakegw.schema": kadm.StringPtr("id long"), "lakegw.primary-key": kadm.StringPtr("id")}
	if resp, err := adm.CreateTopics(ctx, 2, 1, cfg, "fixed"); err != nil || resp["fixed"].Err != nil {
		t.Fatalf("create table topic: %v %v", err, resp["fixed"].Err)
	}
	if resp, err := adm.CreatePartitions(ctx, 1, "fixed"); err != nil || resp["fixed"].Err != kerr.InvalidPartitions {
		t.Fatalf("grow a table topic: %v %v, want INVALID_PARTITIONS", err, resp["fixed"].Err)
	}
}

// consumeAllOfPartitions reads n records of the topic's partitions from
// the start.
func consumeAllOfPartitions(t *testing.T, addr, topic string, partitions int32, n int) []*kgo.Record {
	t.Helper()
	offs := map[int32]kgo.Offset{}
	for p := range partitions {
		offs[p] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: offs}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	return consumeN(t, cl, n, 30*time.Second)
}

// IncrementalAlterConfigs changes a produced topic's configs (table
// properties): a table topic switched from upsert to debezium-json serves
// and takes debezium-json at once; a bad value, another table's topic and
// a raw topic's retention are refused.
func TestAlterProducedTopicConfigs(t *testing.T) {
	dir := t.TempDir()
	setupTable(t, dir)
	g := startGateway(t, dir, "", "--commit-interval", "20ms")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := kadm.NewClient(mustClient(t, g.addr))
	cfg := map[string]*string{"lakegw.schema": kadm.StringPtr("id long, name string"),
		"lakegw.primary-key": kadm.StringPtr("id"), "lakegw.format": kadm.StringPtr("upsert")}
	if resp, err := adm.CreateTopics(ctx, 1, 1, cfg, "alter_me"); err != nil || resp["alter_me"].Err != nil {
		t.Fatalf("create: %v %v", err, resp["alter_me"].Err)
	}
	prod, err := kgo.NewClient(kgo.SeedBrokers(g.addr), kgo.DefaultProduceTopic("alter_me"))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	if err := prod.ProduceSync(ctx, &kgo.Record{Key: []byte(`{"id":1}`), Value: []byte(`{"id":1,"name":"a"}`)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	dreq := kmsg.NewPtrDescribeConfigsRequest()
	dres := kmsg.NewDescribeConfigsRequestResource()
	dres.ResourceType, dres.ResourceName = kmsg.ConfigResourceTypeTopic, "alter_me"
	dreq.Resources = append(dreq.Resources, dres)
	described, err := dreq.RequestWith(ctx, mustClient(t, g.addr))
	if err != nil || len(described.Resources) != 1 {
		t.Fatalf("describe configs: %v", err)
	}
	for _, c := range described.Resources[0].Configs {
		if c.Name == "lakegw.format" && c.ReadOnly {
			t.Fatal("lakegw.format of a table topic is described read-only")
		}
	}
	alter := func(topic, key, value string) error {
		resp, err := adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Op: kadm.SetConfig, Name: key, Value: kadm.StringPtr(value)}}, topic)
		if err != nil {
			return err
		}
		r, err := resp.On(topic, nil)
		if err != nil {
			return err
		}
		return r.Err
	}
	if err := alter("alter_me", "lakegw.format", "debezium-json"); err != nil {
		t.Fatalf("alter the format: %v", err)
	}
	if err := alter("alter_me", "lakegw.batch-records", "lots"); !errors.Is(err, kerr.InvalidConfig) {
		t.Fatalf("a bad value: %v, want INVALID_CONFIG", err)
	}
	if err := alter(topic, "lakegw.format", "json"); !errors.Is(err, kerr.PolicyViolation) {
		t.Fatalf("another table's topic: %v, want POLICY_VIOLATION", err)
	}
	createRawTopic(t, g.addr, "alter_raw", 1)
	if err := alter("alter_raw", "retention.ms", "1000"); !errors.Is(err, kerr.InvalidConfig) {
		t.Fatalf("a raw topic's retention: %v, want INVALID_CONFIG", err)
	}
	if err := alter("alter_raw", "lakegw.commit.interval.ms", "5"); err != nil {
		t.Fatalf("a raw topic's commit interval: %v", err)
	}
	// The topic speaks debezium-json now, both ways.
	dbz := []byte(`{"before":null,"after":{"id":2,"name":"b"},"op":"c"}`)
	deadline := time.Now().Add(15 * time.Second)
	for {
		err := prod.ProduceSync(ctx, &kgo.Record{Key: []byte(`{"id":2}`), Value: dbz}).FirstErr()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a debezium-json record after the change: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		recs := consumeAllOf(t, g.addr, "alter_me", 1)
		var v struct {
			Op    string          `json:"op"`
			After json.RawMessage `json:"after"`
		}
		if err := json.Unmarshal(recs[0].Value, &v); err == nil && v.Op != "" && len(v.After) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the topic still serves %q, not debezium-json", recs[0].Value)
		}
	}
}

// An append table topic (lakegw.schema without a primary key) appends
// one row per produced JSON record; a consumer reads them back as inserts
// at the offsets the producer was told, also after a restart.
func TestAppendTableTopic(t *testing.T) {
	dir := t.TempDir()
	g := startGateway(t, dir, "", "--commit-interval", "20ms")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	adm := kadm.NewClient(mustClient(t, g.addr))
	cfg := map[string]*string{"lakegw.schema": kadm.StringPtr("id long not null, name string, at timestamptz")}
	if resp, err := adm.CreateTopics(ctx, 1, 1, cfg, "ods.clicks"); err != nil || resp["ods.clicks"].Err != nil {
		t.Fatalf("create: %v %v", err, resp["ods.clicks"].Err)
	}
	prod, err := kgo.NewClient(kgo.SeedBrokers(g.addr), kgo.DefaultProduceTopic("ods.clicks"))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	var recs []*kgo.Record
	for i := range 50 {
		recs = append(recs, &kgo.Record{Value: []byte(fmt.Sprintf(`{"id":%d,"name":"n%d","at":"2024-05-0%dT10:00:00Z"}`, i, i, 1+i%9))})
	}
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := prod.ProduceSync(ctx, &kgo.Record{Value: []byte(`{"id":"x"}`)}).FirstErr(); !errors.Is(err, kerr.InvalidRecord) {
		t.Fatalf("a row of the wrong type: %v, want INVALID_RECORD", err)
	}
	check := func(addr string) {
		t.Helper()
		got := consumeAllOf(t, addr, "ods.clicks", len(recs))
		for i, r := range got {
			var v struct {
				ID   int64  `json:"id"`
				Name string `json:"name"`
				Op   string `json:"op"`
			}
			if err := json.Unmarshal(r.Value, &v); err != nil || v.ID != int64(i) || v.Name != fmt.Sprint("n", i) || v.Op != "+I" || r.Offset != recs[i].Offset {
				t.Fatalf("record %d at offset %d (produced at %d): %s %v", i, r.Offset, recs[i].Offset, r.Value, err)
			}
		}
	}
	check(g.addr)
	g.stop()
	check(startGateway(t, dir, "").addr)
}

// assertListedPastAcks checks that the end offsets ListOffsets gives right
// after res's acknowledgements are past every acknowledged record's offset,
// as Kafka's acks=all promises.
func assertListedPastAcks(ctx context.Context, t *testing.T, adm *kadm.Client, topic string, res kgo.ProduceResults) {
	t.Helper()
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res {
		o, ok := ends.Lookup(topic, r.Record.Partition)
		if !ok || o.Err != nil || o.Offset <= r.Record.Offset {
			t.Fatalf("partition %d: end offset %d (%v) listed right after the acknowledgement of offset %d", r.Record.Partition, o.Offset, o.Err, r.Record.Offset)
		}
	}
}

// A raw topic's records are listed and fetched as soon as they are
// acknowledged: each round's ListOffsets is exactly past the round's last
// record, and a consumer at the end gets the records at once.
func TestAcknowledgedRecordsAreServedAtOnce(t *testing.T) {
	dir := t.TempDir()
	g := startGateway(t, dir, "", "--commit-interval", "20ms")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const topic = "acked"
	cl := mustClient(t, g.addr)
	adm := kadm.NewClient(cl)
	if resp, err := adm.CreateTopics(ctx, 2, 1, nil, topic); err != nil || resp[topic].Err != nil {
		t.Fatalf("create topic: %v %v", err, resp[topic].Err)
	}
	details, err := adm.ListTopics(ctx, topic)
	if err != nil || details[topic].Err != nil {
		t.Fatalf("metadata of %s: %v %v", topic, err, details[topic].Err)
	}
	prod, err := kgo.NewClient(kgo.SeedBrokers(g.addr), kgo.DefaultProduceTopic(topic), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	for round := range 30 {
		var recs []*kgo.Record
		for i := range 6 {
			recs = append(recs, &kgo.Record{Partition: int32(i % 2), Value: []byte(fmt.Sprintf("r%d-%d", round, i))})
		}
		res := prod.ProduceSync(ctx, recs...)
		if err := res.FirstErr(); err != nil {
			t.Fatalf("round %d: %v", round, err)
		}
		assertListedPastAcks(ctx, t, adm, topic, res)
		// A fetch from the acknowledged offset returns the record
		// without waiting for the index (max wait 0).
		last := res[len(res)-1].Record
		req := kmsg.NewPtrFetchRequest()
		req.MaxWaitMillis = 0
		req.MinBytes = 1
		req.MaxBytes = 1 << 20
		ft := kmsg.NewFetchRequestTopic()
		ft.Topic, ft.TopicID = topic, details[topic].ID
		fp := kmsg.NewFetchRequestTopicPartition()
		fp.Partition = last.Partition
		fp.FetchOffset = last.Offset
		fp.PartitionMaxBytes = 1 << 20
		ft.Partitions = append(ft.Partitions, fp)
		req.Topics = append(req.Topics, ft)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil {
			t.Fatal(err)
		}
		got := resp.Topics[0].Partitions[0]
		if got.ErrorCode != 0 || got.HighWatermark <= last.Offset || len(got.RecordBatches) == 0 {
			t.Fatalf("round %d: fetch of acknowledged offset %d of partition %d: error %d, high watermark %d, %d bytes of batches",
				round, last.Offset, last.Partition, got.ErrorCode, got.HighWatermark, len(got.RecordBatches))
		}
	}
}
