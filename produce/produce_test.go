package produce

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go/catalog"
	"github.com/rs/zerolog"

	"github.com/lakegw/lakegw/changelog"
	"github.com/lakegw/lakegw/lake"
)

func openCatalog(t testing.TB) (catalog.Catalog, string) {
	t.Helper()
	dir := t.TempDir()
	cat, err := lake.OpenCatalog(context.Background(), dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cat, dir
}

func newService(t *testing.T, cat catalog.Catalog) (*Service, context.CancelFunc) {
	return newServiceWith(t, cat, Config{CommitInterval: 20 * time.Millisecond})
}

// newServiceWith is a Service configured by cfg (logging nothing), stopped
// when the test ends; cancel stops it sooner.
func newServiceWith(t testing.TB, cat catalog.Catalog, cfg Config) (*Service, context.CancelFunc) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cfg.Log = zerolog.Nop()
	s := New(ctx, cat, cfg)
	t.Cleanup(func() { cancel(); s.Wait() })
	return s, cancel
}

// assertRows checks that the rows a scan got (scanRows) are exactly want.
func assertRows(t *testing.T, got, want map[[2]int64]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("scan holds %d rows, want %d", len(got), len(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Fatalf("partition %d offset %d: scan %q, want %q", k[0], k[1], got[k], v)
		}
	}
}

func recs(prefix string, n int) []Record {
	out := make([]Record, n)
	for i := range out {
		out[i] = Record{TimestampMs: 1700000000000 + int64(i), Key: []byte(fmt.Sprintf("%s-k%d", prefix, i)),
			Value: []byte(fmt.Sprintf("%s-v%d", prefix, i)), Headers: []changelog.RawHeader{{Key: "h", Value: []byte(prefix)}}}
	}
	return out
}

// scanRows reads the table with iceberg-go's scanner: partition, offset,
// value of every row.
func scanRows(t *testing.T, cat catalog.Catalog, topic string) map[[2]int64]string {
	t.Helper()
	ident, _ := lake.TopicIdent(topic)
	tbl, err := cat.LoadTable(context.Background(), ident)
	if err != nil {
		t.Fatal(err)
	}
	_, itr, err := tbl.Scan().ToArrowRecords(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[[2]int64]string{}
	for rec, err := range itr {
		if err != nil {
			t.Fatal(err)
		}
		p := rec.Column(0).(*array.Int32)
		o := rec.Column(1).(*array.Int64)
		v := rec.Column(4).(*array.Binary)
		for i := 0; i < int(rec.NumRows()); i++ {
			k := [2]int64{int64(p.Value(i)), o.Value(i)}
			if _, dup := out[k]; dup {
				t.Fatalf("partition %d offset %d appears twice", k[0], k[1])
			}
			out[k] = string(v.Value(i))
		}
		rec.Release()
	}
	return out
}

func TestProduceAssignsDenseOffsetsPerPartition(t *testing.T) {
	cat, _ := openCatalog(t)
	s, _ := newService(t, cat)
	ctx := context.Background()
	if err := s.CreateRawTopic(ctx, "orders", 3, nil, false); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateRawTopic(ctx, "orders", 3, nil, false); !errors.Is(err, ErrTopicExists) {
		t.Fatalf("second create: %v, want ErrTopicExists", err)
	}
	want := map[[2]int64]string{}
	next := make([]int64, 3)
	for round := range 4 {
		var batches []Batch
		for p := range int32(3) {
			batches = append(batches, Batch{Partition: p, ProducerID: NoProducer, Records: recs(fmt.Sprintf("r%dp%d", round, p), 5+int(p))})
		}
		res, _ := s.Produce(ctx, "orders", batches)
		for i, r := range res {
			b := batches[i]
			if r.Err != nil || r.BaseOffset != next[b.Partition] {
				t.Fatalf("round %d partition %d: %+v, want base offset %d", round, b.Partition, r, next[b.Partition])
			}
			for j, rec := range b.Records {
				want[[2]int64{int64(b.Partition), next[b.Partition] + int64(j)}] = string(rec.Value)
			}
			next[b.Partition] += int64(len(b.Records))
		}
	}
	assertRows(t, scanRows(t, cat, "orders"), want)
}

func TestIdempotentProducerDedupesAcrossRestart(t *testing.T) {
	cat, _ := openCatalog(t)
	s, stop := newService(t, cat)
	ctx := context.Background()
	if err := s.CreateRawTopic(ctx, "events", 1, nil, false); err != nil {
		t.Fatal(err)
	}
	pid, epoch, err := s.InitProducerID()
	if err != nil {
		t.Fatal(err)
	}
	b0 := Batch{Partition: 0, ProducerID: pid, ProducerEpoch: epoch, BaseSequence: 0, Records: recs("a", 3)}
	b1 := Batch{Partition: 0, ProducerID: pid, ProducerEpoch: epoch, BaseSequence: 3, Records: recs("b", 2)}
	res, _ := s.Produce(ctx, "events", []Batch{b0})
	if res[0].Err != nil || res[0].BaseOffset != 0 {
		t.Fatalf("first batch: %+v", res[0])
	}
	res, _ = s.Produce(ctx, "events", []Batch{b1})
	if res[0].Err != nil || res[0].BaseOffset != 3 {
		t.Fatalf("second batch: %+v", res[0])
	}
	// A retry of the second batch: its first offset, nothing written.
	res, _ = s.Produce(ctx, "events", []Batch{b1})
	if res[0].Err != nil || res[0].BaseOffset != 3 {
		t.Fatalf("retry: %+v, want offset 3", res[0])
	}
	// A gap in the sequence.
	gap := Batch{Partition: 0, ProducerID: pid, ProducerEpoch: epoch, BaseSequence: 9, Records: recs("c", 1)}
	if res, _ = s.Produce(ctx, "events", []Batch{gap}); !errors.Is(res[0].Err, ErrOutOfOrderSequence) {
		t.Fatalf("gap: %v, want ErrOutOfOrderSequence", res[0].Err)
	}

	// A new gateway on the same table (the old one killed): the retry is
	// still recognised from the snapshot summaries.
	stop()
	s.Wait()
	s2, _ := newService(t, cat)
	res, _ = s2.Produce(ctx, "events", []Batch{b1, b0})
	if res[0].Err != nil || res[0].BaseOffset != 3 || res[1].Err != nil || res[1].BaseOffset != 0 {
		t.Fatalf("retries after restart: %+v", res)
	}
	b2 := Batch{Partition: 0, ProducerID: pid, ProducerEpoch: epoch, BaseSequence: 5, Records: recs("d", 1)}
	if res, _ = s2.Produce(ctx, "events", []Batch{b2}); res[0].Err != nil || res[0].BaseOffset != 5 {
		t.Fatalf("next batch after restart: %+v", res[0])
	}
	// An older epoch is fenced once a newer one wrote.
	newer := Batch{Partition: 0, ProducerID: pid, ProducerEpoch: epoch + 1, BaseSequence: 0, Records: recs("e", 1)}
	if res, _ = s2.Produce(ctx, "events", []Batch{newer}); res[0].Err != nil {
		t.Fatalf("newer epoch: %+v", res[0])
	}
	old := Batch{Partition: 0, ProducerID: pid, ProducerEpoch: epoch, BaseSequence: 6, Records: recs("f", 1)}
	if res, _ = s2.Produce(ctx, "events", []Batch{old}); !errors.Is(res[0].Err, ErrInvalidProducerEpoch) {
		t.Fatalf("old epoch: %v, want ErrInvalidProducerEpoch", res[0].Err)
	}
	got := scanRows(t, cat, "events")
	wantVals := []string{"a-v0", "a-v1", "a-v2", "b-v0", "b-v1", "d-v0", "e-v0"}
	var vals []string
	for o := range int64(len(got)) {
		vals = append(vals, got[[2]int64{0, o}])
	}
	if !slices.Equal(vals, wantVals) {
		t.Fatalf("table rows %q, want %q", vals, wantVals)
	}
}

func TestProduceRefusesReadOnlyAndUnknownTopics(t *testing.T) {
	cat, _ := openCatalog(t)
	s, _ := newService(t, cat)
	ctx := context.Background()
	res, _ := s.Produce(ctx, "nope", []Batch{{Partition: 0, ProducerID: NoProducer, Records: recs("x", 1)}})
	if !errors.Is(res[0].Err, ErrUnknownTopic) {
		t.Fatalf("unknown topic: %v", res[0].Err)
	}
	if err := s.CreateRawTopic(ctx, "two", 2, nil, false); err != nil {
		t.Fatal(err)
	}
	res, _ = s.Produce(ctx, "two", []Batch{{Partition: 2, ProducerID: NoProducer, Records: recs("x", 1)}})
	if !errors.Is(res[0].Err, ErrUnknownPartition) {
		t.Fatalf("partition 2 of 2: %v", res[0].Err)
	}
	if err := s.CreateRawTopic(ctx, "bad/name", 1, nil, false); !errors.Is(err, ErrInvalidTopic) {
		t.Fatalf("bad name: %v", err)
	}
	if err := s.CreateRawTopic(ctx, "cfg", 1, map[string]string{"cleanup.policy": "compact"}, false); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("unsupported config: %v", err)
	}
}

// lakegw.commit.interval.ms overrides the gateway's interval per topic: a
// second batch waits for it (here a minute, so it is still waiting when
// its producer gives up), and a bad value is refused at creation.
func TestCommitIntervalPerTopic(t *testing.T) {
	cat, _ := openCatalog(t)
	s, _ := newService(t, cat)
	ctx := context.Background()
	if err := s.CreateRawTopic(ctx, "slow", 1, map[string]string{ConfigCommitInterval: "soon"}, false); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("a bad interval: %v", err)
	}
	if err := s.CreateRawTopic(ctx, "slow", 1, map[string]string{ConfigCommitInterval: "60000"}, false); err != nil {
		t.Fatal(err)
	}
	res, _ := s.Produce(ctx, "slow", []Batch{{Partition: 0, ProducerID: NoProducer, Records: recs("a", 1)}})
	if res[0].Err != nil {
		t.Fatalf("first batch (the first commit is not held back): %v", res[0].Err)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	res, _ = s.Produce(short, "slow", []Batch{{Partition: 0, ProducerID: NoProducer, Records: recs("b", 1)}})
	if !errors.Is(res[0].Err, context.DeadlineExceeded) {
		t.Fatalf("second batch within the minute: %+v, want still waiting", res[0])
	}
}

// A table has one writer whichever of its names producers use: the same
// idempotent batch sent to "orders" and to "kafka.orders" within one commit
// interval is written once, and both requests are told its offset.
func TestBareAndQualifiedTopicNamesShareOneWriter(t *testing.T) {
	cat, _ := openCatalog(t)
	s, _ := newService(t, cat)
	ctx := context.Background()
	if err := s.CreateRawTopic(ctx, "orders", 1, map[string]string{ConfigCommitInterval: "500"}, false); err != nil {
		t.Fatal(err)
	}
	// The first commit is not held back; the batches below wait for the
	// next one together.
	if res, _ := s.Produce(ctx, "orders", []Batch{{Partition: 0, ProducerID: NoProducer, Records: recs("first", 1)}}); res[0].Err != nil {
		t.Fatal(res[0].Err)
	}
	batch := Batch{Partition: 0, ProducerID: 7, BaseSequence: 0, Records: recs("once", 5)}
	var wg sync.WaitGroup
	results := make([]Result, 2)
	for i, name := range []string{"orders", "kafka.orders"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, _ := s.Produce(ctx, name, []Batch{batch})
			results[i] = res[0]
		}()
	}
	wg.Wait()
	for i, r := range results {
		if r.Err != nil || r.BaseOffset != 1 {
			t.Fatalf("request %d: %+v, want base offset 1", i, r)
		}
	}
	if got := scanRows(t, cat, "orders"); len(got) != 6 {
		t.Fatalf("the table holds %d rows, want 6 (the batch written once)", len(got))
	}
}
