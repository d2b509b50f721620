package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/twmb/franz-go/pkg/kgo"
)

// TestConsumerInsideACompactedPrefixIsRedelivered: a franz-go consumer has
// read the first snapshot (offsets 0..9) when the table's oldest snapshot
// expires and the live rows of the next one become a compacted prefix over
// offsets 8..13. Resuming at offset 10 with the epoch of its last record,
// it must be told of the truncation and read the whole prefix: its
// materialized table then holds every live row of an iceberg-go scan.
// (With the prefix's epoch starting at its end, it read on from offset 10
// and silently missed two rows.)
func TestConsumerInsideACompactedPrefixIsRedelivered(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	w := newPrefixTable(t, dir)
	g := startGateway(t, dir, "")

	mat := map[int64]string{}
	cl := consumerAt(t, g, kgo.NewOffset().AtStart())
	first := consumeN(t, cl, 10, 30*time.Second)
	cl.Close()
	var lastEpoch int32
	for _, r := range first[:10] {
		applyDebezium(t, mat, r)
		lastEpoch = r.LeaderEpoch
	}

	// Expire the first snapshot; then one more snapshot (ids 11..15).
	expireAllBut(t, w, 1)
	w.appendRows(5)
	waitForPrefix(t, g, 19)

	// The consumer resumes where it was, knowing the epoch of its last
	// record (as a group consumer's committed offset does).
	cl = consumerAt(t, g, kgo.NewOffset().At(10).WithEpoch(lastEpoch))
	defer cl.Close()
	pollCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var lost *kgo.ErrDataLoss
	next := int64(10)
	for next < 19 {
		fs := cl.PollFetches(pollCtx)
		if pollCtx.Err() != nil {
			t.Fatalf("consumer stopped at offset %d before the high watermark 19", next)
		}
		for _, e := range fs.Errors() {
			if !errors.As(e.Err, &lost) {
				t.Fatalf("fetch error: %v", e.Err)
			}
		}
		for _, r := range fs.Records() {
			applyDebezium(t, mat, r)
			next = r.Offset + 1
		}
	}
	if lost == nil || lost.ResetTo != 8 {
		t.Fatalf("the consumer inside the prefix was not told of the truncation to 8 (data loss: %+v)", lost)
	}

	assertMatchesScan(t, w, mat)
}

// newPrefixTable writes the table both prefix tests start from: ids 1..10
// at offsets 0..9, then the delete of ids 1..4 at offsets 10..13, whose
// live rows (ids 5..10) become the prefix 8..13 once the first expires.
func newPrefixTable(t *testing.T, dir string) *tableWriter {
	t.Helper()
	w := newTableWriter(t, dir, "e2e", "events")
	w.appendRows(10)
	tbl, err := w.cat.LoadTable(context.Background(), w.ident)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.Delete(context.Background(), iceberg.LessThanEqual(iceberg.Reference("id"), int64(4)), nil); err != nil {
		t.Fatal(err)
	}
	return w
}

// expireAllBut expires every snapshot of w's table but the newest keep,
// as any Iceberg writer's expire_snapshots does.
func expireAllBut(t *testing.T, w *tableWriter, keep int) {
	t.Helper()
	ctx := context.Background()
	tbl, err := w.cat.LoadTable(ctx, w.ident)
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.ExpireSnapshots(table.WithRetainLast(keep), table.WithOlderThan(0)); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}

// waitForPrefix waits until the gateway serves the prefix 8..13 of
// newPrefixTable's table with the high watermark hwm.
func waitForPrefix(t *testing.T, g *gateway, hwm int64) {
	t.Helper()
	probe := mustClient(t, g.addr)
	deadline := time.Now().Add(20 * time.Second)
	for p := rawFetch(t, probe, topic, 8, 12); p.LogStartOffset != 8 || p.HighWatermark != hwm; p = rawFetch(t, probe, topic, 8, 12) {
		if time.Now().After(deadline) {
			t.Fatalf("the topic did not become the prefix 8..13 up to %d: log start %d, hwm %d", hwm, p.LogStartOffset, p.HighWatermark)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// consumerAt is a franz-go client consuming partition 0 of the topic from
// off; the caller closes it.
func consumerAt(t *testing.T, g *gateway, off kgo.Offset) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(g.addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: off}}))
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// assertMatchesScan checks that every row of an iceberg-go scan of w's
// table is in mat, and returns the scan.
func assertMatchesScan(t *testing.T, w *tableWriter, mat map[int64]string) map[int64]string {
	t.Helper()
	tbl, err := w.cat.LoadTable(context.Background(), w.ident)
	if err != nil {
		t.Fatal(err)
	}
	want := scanNames(t, tbl)
	for id, name := range want {
		if got, ok := mat[id]; !ok || got != name {
			t.Errorf("id %d: materialized %q (present %v), scan %q", id, got, ok, name)
		}
	}
	return want
}

// applyDebezium applies one debezium-json record to a table of id -> name.
func applyDebezium(t *testing.T, mat map[int64]string, r *kgo.Record) {
	t.Helper()
	var v debezium
	if err := json.Unmarshal(r.Value, &v); err != nil {
		t.Fatalf("offset %d: %v: %s", r.Offset, err, r.Value)
	}
	switch {
	case v.Op == "d" && v.Before != nil:
		delete(mat, v.Before.ID)
	case v.After != nil:
		mat[v.After.ID] = v.After.Name
	default:
		t.Fatalf("offset %d: unexpected record %s", r.Offset, r.Value)
	}
}

// scanNames reads the table's current rows with iceberg-go: id -> name.
func scanNames(t *testing.T, tbl *table.Table) map[int64]string {
	t.Helper()
	at, err := tbl.Scan().ToArrowTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	out := map[int64]string{}
	tr := array.NewTableReader(at, 1024)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		ids := rec.Column(0).(*array.Int64)
		names := rec.Column(1).(*array.String)
		for i := range ids.Len() {
			out[ids.Value(i)] = names.Value(i)
		}
	}
	return out
}

// TestConsumerPastACompactedPrefixReadsOn: a franz-go consumer following
// the head has read three snapshots (offsets 0..18) when the oldest
// expires and the live rows of the second become a compacted prefix over
// offsets 8..13. Its last record, the third snapshot's, is still served
// at its offset: it must read on from 19 with no truncation and no record
// delivered twice, as a Kafka consumer past a compacted segment does.
// (With one epoch for the whole log, every expiry told it its epoch ended
// at the prefix's base, and it read the whole table again.)
func TestConsumerPastACompactedPrefixReadsOn(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	w := newPrefixTable(t, dir)
	w.appendRows(5) // ids 11..15 at offsets 14..18
	g := startGateway(t, dir, "")

	mat := map[int64]string{}
	cl := consumerAt(t, g, kgo.NewOffset().AtStart())
	defer cl.Close()
	for _, r := range consumeN(t, cl, 19, 30*time.Second) {
		applyDebezium(t, mat, r)
	}

	// Expire the first snapshot only; then one more (ids 16..20).
	expireAllBut(t, w, 2)
	waitForPrefix(t, g, 19)
	w.appendRows(5)

	pollCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	next := int64(19)
	for next < 24 {
		fs := cl.PollFetches(pollCtx)
		if pollCtx.Err() != nil {
			t.Fatalf("consumer stopped at offset %d before the high watermark 24", next)
		}
		for _, e := range fs.Errors() {
			t.Fatalf("a consumer past the prefix got %v", e.Err)
		}
		for _, r := range fs.Records() {
			if r.Offset != next {
				t.Fatalf("record at offset %d, want %d: a consumer past the prefix must read on, not again", r.Offset, next)
			}
			applyDebezium(t, mat, r)
			next = r.Offset + 1
		}
	}

	if want := assertMatchesScan(t, w, mat); len(mat) != len(want) {
		t.Errorf("materialized %d rows, scan %d", len(mat), len(want))
	}
}
