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
	w := newTableWriter(t, dir, "e2e", "events")
	w.appendRows(10) // ids 1..10 at offsets 0..9
	tbl, err := w.cat.LoadTable(ctx, w.ident)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tbl.Delete(ctx, iceberg.LessThanEqual(iceberg.Reference("id"), int64(4)), nil); err != nil {
		t.Fatal(err) // 4 deletes at offsets 10..13
	}
	g := startGateway(t, dir, "")

	mat := map[int64]string{}
	cl, err := kgo.NewClient(kgo.SeedBrokers(g.addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	first := consumeN(t, cl, 10, 30*time.Second)
	cl.Close()
	var lastEpoch int32
	for _, r := range first[:10] {
		applyDebezium(t, mat, r)
		lastEpoch = r.LeaderEpoch
	}

	// Expire the first snapshot; then one more snapshot (ids 11..15).
	tbl, err = w.cat.LoadTable(ctx, w.ident)
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.ExpireSnapshots(table.WithRetainLast(1), table.WithOlderThan(0)); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	w.appendRows(5)
	probe := mustClient(t, g.addr)
	deadline := time.Now().Add(20 * time.Second)
	for p := rawFetch(t, probe, topic, 8, 12); p.LogStartOffset != 8 || p.HighWatermark != 19; p = rawFetch(t, probe, topic, 8, 12) {
		if time.Now().After(deadline) {
			t.Fatalf("the topic did not become prefix 8..13 + 5 inserts: log start %d, hwm %d", p.LogStartOffset, p.HighWatermark)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// The consumer resumes where it was, knowing the epoch of its last
	// record (as a group consumer's committed offset does).
	cl, err = kgo.NewClient(kgo.SeedBrokers(g.addr),
		kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().At(10).WithEpoch(lastEpoch)}}))
	if err != nil {
		t.Fatal(err)
	}
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

	tbl, err = w.cat.LoadTable(ctx, w.ident)
	if err != nil {
		t.Fatal(err)
	}
	for id, want := range scanNames(t, tbl) {
		if got, ok := mat[id]; !ok || got != want {
			t.Errorf("id %d: materialized %q (present %v), scan %q", id, got, ok, want)
		}
	}
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
