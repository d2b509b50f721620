package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
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
