package derive

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/rs/zerolog"

	"github.com/lakegw/lakegw/changelog"
)

func testSchema() *iceberg.Schema {
	return iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "amount", Type: iceberg.DecimalTypeOf(10, 2)},
	)
}

func jsonRows(from, to int) string {
	var b strings.Builder
	b.WriteByte('[')
	for i := from; i < to; i++ {
		if i > from {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"name":"n%d","amount":"%d.%02d"}`, i, i%7, i, i%100)
	}
	b.WriteByte(']')
	return b.String()
}

func TestDeriveAppendsMatchScan(t *testing.T) {
	ctx := context.Background()
	cat := newTestCatalog(t)
	tbl := createTable(t, cat, "appends", testSchema())
	tbl = appendJSON(t, tbl, jsonRows(0, 10), 0)
	tbl = appendJSON(t, tbl, jsonRows(10, 35), 10) // three data files
	tbl = appendJSON(t, tbl, jsonRows(35, 36), 0)

	hist, err := changelog.MainHistory(tbl.Metadata())
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 3 {
		t.Fatalf("history has %d snapshots, want 3", len(hist))
	}
	state := rowMultiset{}
	wantInserts := []int{10, 25, 1}
	for i, snap := range hist {
		c, err := Derive(ctx, tbl, snap, Options{Log: zerolog.Nop()})
		if err != nil {
			t.Fatalf("derive snapshot %d: %v", snap.SnapshotID, err)
		}
		if got := countOps(c); got[changelog.OpInsert] != wantInserts[i] || len(c.Records) != wantInserts[i] {
			t.Errorf("snapshot %d: ops %v, want %d inserts", i, got, wantInserts[i])
		}
		if c.Table != "ns.appends" || c.SnapshotID != snap.SnapshotID || c.SequenceNumber != snap.SequenceNumber || c.TimestampMs != snap.TimestampMs {
			t.Errorf("snapshot %d: header fields %q %d %d %d", i, c.Table, c.SnapshotID, c.SequenceNumber, c.TimestampMs)
		}
		if len(c.KeyFieldIDs) != 1 || c.KeyFieldIDs[0] != 1 {
			t.Errorf("key field ids %v, want [1]", c.KeyFieldIDs)
		}
		applyChanges(t, state, c)
		compareMultisets(t, fmt.Sprintf("snapshot %d", i), scanRows(t, tbl, snap.SnapshotID), state)
		c.Release()
	}
}

func TestDeriveAppendOrderAndPartitions(t *testing.T) {
	ctx := context.Background()
	cat := newTestCatalog(t)
	tbl := createTable(t, cat, "parts", testSchema())
	tbl = appendJSON(t, tbl, jsonRows(0, 40), 7)
	hist, err := changelog.MainHistory(tbl.Metadata())
	if err != nil {
		t.Fatal(err)
	}
	derive := func() *changelog.Changes {
		c, err := Derive(ctx, tbl, hist[0], Options{Partitions: 4})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	a, b := derive(), derive()
	defer a.Release()
	defer b.Release()
	f, _ := changelog.FormatByName("debezium-json")
	// The partitions changelog's key partitioner gives every row.
	keyParts := make([][]int32, len(a.Batches))
	for bi, batch := range a.Batches {
		if keyParts[bi], err = changelog.KeyPartitions(a.Schema, a.KeyFieldIDs, nil, batch, 4); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[int32]bool{}
	for i := range a.Records {
		va, _ := f.AppendValue(nil, a, &a.Records[i])
		vb, _ := f.AppendValue(nil, b, &b.Records[i])
		if string(va) != string(vb) || a.Records[i].Partition != b.Records[i].Partition {
			t.Fatalf("record %d differs between two derivations:\n%s\n%s", i, va, vb)
		}
		key, ok := f.AppendKey(nil, a, &a.Records[i])
		if !ok {
			t.Fatalf("record %d has no key", i)
		}
		after := a.Records[i].After
		if p, want := a.Records[i].Partition, keyParts[after.Batch][after.Row]; p != want || p < 0 || p >= 4 {
			t.Fatalf("record %d key %s in partition %d, want %d", i, key, p, want)
		}
		seen[a.Records[i].Partition] = true
	}
	if len(seen) < 2 {
		t.Errorf("40 keys all landed in partitions %v", seen)
	}
	counts := a.CountByPartition()
	var total int64
	for _, n := range counts {
		total += n
	}
	if total != 40 {
		t.Errorf("CountByPartition sums to %d, want 40", total)
	}
	// Each partition's records, as fetches take them: every record once,
	// in its partition's list, in record order.
	listed := 0
	for p := range int32(4) {
		recs := a.PartitionRecords(p)
		if int64(len(recs)) != counts[p] {
			t.Errorf("partition %d lists %d records, CountByPartition says %d", p, len(recs), counts[p])
		}
		for j, i := range recs {
			if a.Records[i].Partition != p || (j > 0 && i <= recs[j-1]) {
				t.Fatalf("partition %d lists record %d (of partition %d) at %d: %v", p, i, a.Records[i].Partition, j, recs)
			}
		}
		listed += len(recs)
	}
	if listed != 40 || a.PartitionRecords(4) != nil || a.PartitionRecords(-1) != nil {
		t.Errorf("partitions list %d records, want 40; partitions 4 and -1: %v %v", listed, a.PartitionRecords(4), a.PartitionRecords(-1))
	}
	// Rows come in file-path order, rows in file order: the ids of a
	// single-writer append increase within each file.
	first, _ := f.AppendKey(nil, a, &a.Records[0])
	if !strings.HasPrefix(string(first), `{"id":`) {
		t.Errorf("key JSON %s", first)
	}
}
