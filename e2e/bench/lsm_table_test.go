package main

import (
	"fmt"
	"testing"

	"github.com/apache/iceberg-go/table"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lakegw/lakegw/lake"
)

// dbzRecord is a record as lakegw serves it in debezium-json.
func dbzRecord(snap int64, table string, id int, before, after, op string) *kgo.Record {
	return &kgo.Record{
		Key: fmt.Appendf(nil, `{"id":%d}`, id),
		Value: fmt.Appendf(nil, `{"before":%s,"after":%s,"op":"%s","ts_ms":%d,"source":{"connector":"lakegw","table":"%s","snapshot_id":%d,"sequence_number":1,"ts_ms":%d}}`,
			before, after, op, snap/7, table, snap, snap/7),
		Headers: []kgo.RecordHeader{{Key: "lakegw.snapshot-id", Value: fmt.Append(nil, snap)}, {Key: "lakegw.op", Value: []byte(op)}},
	}
}

func digestOf(t *testing.T, recs ...*kgo.Record) *changeDigest {
	t.Helper()
	d := &changeDigest{}
	for _, r := range recs {
		d.add(r)
	}
	if d.err != nil {
		t.Fatal(d.err)
	}
	return d
}

// TestChangeDigest: the digest ignores snapshot ids, timestamps, the table
// name and the order within a snapshot, and sees any change of a key, op
// or image, and records moved between snapshots.
func TestChangeDigest(t *testing.T) {
	main := digestOf(t,
		dbzRecord(111, "bench.orders", 1, "null", `{"id":1,"v":"a"}`, "c"),
		dbzRecord(111, "bench.orders", 2, "null", `{"id":2,"v":"b"}`, "c"),
		dbzRecord(222, "bench.orders", 1, `{"id":1,"v":"a"}`, "null", "d"),
		dbzRecord(222, "bench.orders", 3, "null", `{"id":3,"v":"c"}`, "c"),
		dbzRecord(222, "bench.orders", 2, `{"id":2,"v":"b"}`, `{"id":2,"v":"B"}`, "u"),
	)
	same := digestOf(t,
		dbzRecord(9001, "bench.orders_lsm", 1, "null", `{"id":1,"v":"a"}`, "c"),
		dbzRecord(9001, "bench.orders_lsm", 2, "null", `{"id":2,"v":"b"}`, "c"),
		dbzRecord(9555, "bench.orders_lsm", 1, `{"id":1,"v":"a"}`, "null", "d"),
		dbzRecord(9555, "bench.orders_lsm", 2, `{"id":2,"v":"b"}`, `{"id":2,"v":"B"}`, "u"),
		dbzRecord(9555, "bench.orders_lsm", 3, "null", `{"id":3,"v":"c"}`, "c"),
	)
	if d := main.compare(same, "a", "b"); d != "" || main.total() != same.total() {
		t.Fatalf("the same changes differ: %s", d)
	}
	for name, other := range map[string]*changeDigest{
		"after-image": digestOf(t,
			dbzRecord(1, "x", 1, "null", `{"id":1,"v":"a"}`, "c"),
			dbzRecord(1, "x", 2, "null", `{"id":2,"v":"b"}`, "c"),
			dbzRecord(2, "x", 1, `{"id":1,"v":"a"}`, "null", "d"),
			dbzRecord(2, "x", 3, "null", `{"id":3,"v":"c"}`, "c"),
			dbzRecord(2, "x", 2, `{"id":2,"v":"b"}`, `{"id":2,"v":"b"}`, "u")),
		"op": digestOf(t,
			dbzRecord(1, "x", 1, "null", `{"id":1,"v":"a"}`, "r"),
			dbzRecord(1, "x", 2, "null", `{"id":2,"v":"b"}`, "c"),
			dbzRecord(2, "x", 1, `{"id":1,"v":"a"}`, "null", "d"),
			dbzRecord(2, "x", 3, "null", `{"id":3,"v":"c"}`, "c"),
			dbzRecord(2, "x", 2, `{"id":2,"v":"b"}`, `{"id":2,"v":"B"}`, "u")),
		"key": digestOf(t,
			dbzRecord(1, "x", 1, "null", `{"id":1,"v":"a"}`, "c"),
			dbzRecord(1, "x", 2, "null", `{"id":2,"v":"b"}`, "c"),
			dbzRecord(2, "x", 4, `{"id":1,"v":"a"}`, "null", "d"),
			dbzRecord(2, "x", 3, "null", `{"id":3,"v":"c"}`, "c"),
			dbzRecord(2, "x", 2, `{"id":2,"v":"b"}`, `{"id":2,"v":"B"}`, "u")),
		"snapshots": digestOf(t,
			dbzRecord(1, "x", 1, "null", `{"id":1,"v":"a"}`, "c"),
			dbzRecord(1, "x", 2, "null", `{"id":2,"v":"b"}`, "c"),
			dbzRecord(1, "x", 1, `{"id":1,"v":"a"}`, "null", "d"),
			dbzRecord(2, "x", 3, "null", `{"id":3,"v":"c"}`, "c"),
			dbzRecord(2, "x", 2, `{"id":2,"v":"b"}`, `{"id":2,"v":"B"}`, "u")),
	} {
		if main.compare(other, "a", "b") == "" {
			t.Errorf("a different %s was not noticed", name)
		}
	}
	bad := &changeDigest{}
	bad.add(&kgo.Record{Value: []byte(`{"id":1}`)})
	if bad.err == nil {
		t.Fatal("a record that is not debezium-json was accepted")
	}
}

// TestTablegenChanges: the changes tablegen reports are the ones it wrote,
// each order at most once per snapshot.
func TestTablegenChanges(t *testing.T) {
	ctx := t.Context()
	cat, err := lake.OpenCatalog(ctx, t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	gen, err := newTableGen(ctx, cat, table.Identifier{"bench", "orders"}, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	var total int
	for range 4 {
		if err := gen.commit(ctx, 1000); err != nil {
			t.Fatal(err)
		}
		seen := map[int64]bool{}
		for _, c := range gen.LastChanges {
			if seen[c.id] {
				t.Fatalf("snapshot %d changes order %d twice", gen.Snapshots, c.id)
			}
			seen[c.id] = true
		}
		total += len(gen.LastChanges)
	}
	if int64(total) != gen.Changes {
		t.Fatalf("%d changes reported, %d committed", total, gen.Changes)
	}
}
