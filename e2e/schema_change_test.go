package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lakegw/lakegw/lake"
)

// TestSchemaChangeReencodesInPlace serves tables in every format while
// another writer changes their schema in every way Iceberg allows: columns
// renamed (the key and a nested field among them), promoted (int to long,
// float to double, a decimal's precision), added (top-level and nested),
// dropped and moved. At once, every offset is served in the new schema, as
// every Iceberg reader shows the table: the same records at the same
// offsets and partitions, old rows under the new names, added columns
// null, the debezium source naming the new schema, each format's images
// equal to debezium's; under a new leader epoch that starts at the log
// end, so a consumer at the head validates its position and reads on (no
// truncation, nothing twice). A table configured with
// lakegw.schema-mode=as-written, and a gateway started with
// --schema-mode as-written, keep each snapshot's own schema.
func TestSchemaChangeReencodesInPlace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	dataDir := t.TempDir()
	cat, err := lake.OpenCatalog(ctx, dataDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.CreateNamespace(ctx, table.Identifier{"evo"}, nil); err != nil {
		t.Fatal(err)
	}
	type served struct {
		format string
		props  map[string]string
		ident  table.Identifier
		before []*kgo.Record
	}
	tables := []*served{
		{format: "debezium-json"},
		{format: "canal-json", props: map[string]string{"lakegw.format": "canal-json"}},
		{format: "upsert", props: map[string]string{"lakegw.format": "upsert", "lakegw.partitions": "3"}},
		{format: "json", props: map[string]string{"lakegw.format": "json"}},
		{format: "as-written", props: map[string]string{"lakegw.schema-mode": "as-written"}},
	}
	sc := iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "qty", Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: 4, Name: "price", Type: iceberg.PrimitiveTypes.Float32},
		iceberg.NestedField{ID: 5, Name: "amt", Type: iceberg.DecimalTypeOf(9, 2)},
		iceberg.NestedField{ID: 6, Name: "addr", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 7, Name: "city", Type: iceberg.PrimitiveTypes.String},
			{ID: 8, Name: "zip", Type: iceberg.PrimitiveTypes.Int32},
		}}},
		iceberg.NestedField{ID: 9, Name: "gone", Type: iceberg.PrimitiveTypes.String},
	)
	rows := func(from, to int) string {
		var out []string
		for i := from; i < to; i++ {
			out = append(out, fmt.Sprintf(`{"id":%d,"name":"n%d","qty":%d,"price":%d.1,"amt":"%d.25","addr":{"city":"c%d","zip":%d},"gone":"g"}`, i, i, i*3, i, i, i%3, 1000+i))
		}
		return "[" + strings.Join(out, ",") + "]"
	}
	for i, s := range tables {
		s.ident = table.Identifier{"evo", fmt.Sprintf("t%d", i)}
		props := iceberg.Properties{"format-version": "2"}
		maps.Copy(props, s.props)
		if _, err := cat.CreateTable(ctx, s.ident, sc, catalog.WithProperties(props)); err != nil {
			t.Fatal(err)
		}
		appendCurrentJSON(t, cat, s.ident, rows(0, 4))
		appendCurrentJSON(t, cat, s.ident, rows(4, 10))
	}
	g := startGateway(t, dataDir, "")
	adm := kadm.NewClient(mustClient(t, g.addr))
	topicOf := func(s *served) string { return strings.Join(s.ident, ".") }
	for _, s := range tables {
		s.before = consumeAllPartitions(t, g.addr, topicOf(s), 10)
	}
	epochs := map[string]int32{}
	for _, s := range tables {
		epochs[topicOf(s)] = hostileCacheEpochAbove(t, adm, topicOf(s), -1)
	}

	for _, s := range tables {
		tbl, err := cat.LoadTable(ctx, s.ident)
		if err != nil {
			t.Fatal(err)
		}
		tx := tbl.NewTransaction()
		u := table.NewUpdateSchema(tx, true, false)
		u.RenameColumn([]string{"id"}, "key_id")
		u.RenameColumn([]string{"name"}, "label")
		u.RenameColumn([]string{"addr", "city"}, "town")
		u.UpdateColumn([]string{"qty"}, table.ColumnUpdate{FieldType: iceberg.Optional[iceberg.Type]{Valid: true, Val: iceberg.PrimitiveTypes.Int64}})
		u.UpdateColumn([]string{"price"}, table.ColumnUpdate{FieldType: iceberg.Optional[iceberg.Type]{Valid: true, Val: iceberg.PrimitiveTypes.Float64}})
		u.UpdateColumn([]string{"amt"}, table.ColumnUpdate{FieldType: iceberg.Optional[iceberg.Type]{Valid: true, Val: iceberg.DecimalTypeOf(18, 2)}})
		u.AddColumn([]string{"note"}, iceberg.PrimitiveTypes.String, "", false, nil)
		u.AddColumn([]string{"addr", "country"}, iceberg.PrimitiveTypes.String, "", false, nil)
		u.DeleteColumn([]string{"gone"})
		u.MoveFirst([]string{"amt"})
		if err := u.Commit(); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Commit(ctx); err != nil {
			t.Fatalf("evolve %v: %v", s.ident, err)
		}
	}

	current := []string{"amt", "key_id", "label", "qty", "price", "addr", "note"}
	written := []string{"id", "name", "qty", "price", "amt", "addr", "gone"}
	// What every format writes of the first row now, as debezium's
	// after-image: a float 0.1f promoted to double is 0.10000000149011612.
	const firstRow = `{"amt":0.25,"key_id":0,"label":"n0","qty":0,"price":0.10000000149011612,"addr":{"town":"c0","zip":1000,"country":null},"note":null}`
	for _, s := range tables {
		topic := topicOf(s)
		want := current
		if s.format == "as-written" {
			want = written
			// Nothing about its records changed: no new epoch.
			time.Sleep(time.Second)
			if e := hostileCacheEpochAbove(t, adm, topic, -1); e != epochs[topic] {
				t.Errorf("%s: leader epoch %d after a schema change, was %d: as written, nothing was re-encoded", topic, e, epochs[topic])
			}
		} else {
			hostileCacheEpochAbove(t, adm, topic, epochs[topic])
		}
		after := consumeAllPartitions(t, g.addr, topic, 10)
		for i, r := range after {
			b := s.before[i]
			if r.Partition != b.Partition || r.Offset != b.Offset || r.LeaderEpoch != b.LeaderEpoch || header(r, "lakegw.snapshot-id") != header(b, "lakegw.snapshot-id") {
				t.Fatalf("%s: record %d is %d/%d epoch %d snapshot %s after the change, was %d/%d epoch %d snapshot %s",
					topic, i, r.Partition, r.Offset, r.LeaderEpoch, header(r, "lakegw.snapshot-id"), b.Partition, b.Offset, b.LeaderEpoch, header(b, "lakegw.snapshot-id"))
			}
			img := checkColumns(t, s.format, r, want)
			if s.format != "as-written" && bytes.Contains(img, []byte(`"key_id":0,`)) && string(img) != firstRow {
				t.Errorf("%s: the first row\n got %s\nwant %s", topic, img, firstRow)
			}
		}
		if s.format == "as-written" {
			continue
		}
		// A consumer at the head of each partition validates the epoch
		// of its last record: its epoch ends at the log end, at its
		// position or past it.
		last := map[int32]*kgo.Record{}
		for _, r := range s.before {
			last[r.Partition] = r
		}
		for p, r := range last {
			if end := epochEnd(t, g.addr, topic, p, r.LeaderEpoch); end < r.Offset+1 {
				t.Errorf("%s/%d: OffsetForLeaderEpoch(%d) ends at %d, before the consumer's position %d: it would read again", topic, p, r.LeaderEpoch, end, r.Offset+1)
			}
		}
	}

	// New rows in the new schema follow at the next offsets.
	s := tables[0]
	appendCurrentJSON(t, cat, s.ident, `[{"amt":"1.5","key_id":100,"label":"new","qty":5000000000,"price":1.5,"addr":null,"note":"n"}]`)
	all := consumeAllPartitions(t, g.addr, topicOf(s), 11)
	if r := all[10]; r.Offset != 10 || !bytes.Contains(r.Value, []byte(`"after":{"amt":1.50,"key_id":100,"label":"new","qty":5000000000,"price":1.5,"addr":null,"note":"n"}`)) {
		t.Errorf("the row appended after the change: offset %d value %s", r.Offset, r.Value)
	}

	// The gateway's default: as written, unless the table says otherwise.
	g.stop()
	g2 := startGateway(t, dataDir, "", "--schema-mode", "as-written")
	for _, r := range consumeAllPartitions(t, g2.addr, topicOf(s), 11)[:10] {
		checkColumns(t, "as-written", r, written)
	}
}

// checkColumns asserts that the row images of r, in format, have exactly
// the columns want, in order (and the key its key_id, in the current
// schema); it returns the after-image (the row).
func checkColumns(t *testing.T, format string, r *kgo.Record, want []string) (after []byte) {
	t.Helper()
	var images []json.RawMessage
	switch format {
	case "debezium-json", "as-written":
		var v struct {
			Before, After json.RawMessage
			Source        struct {
				SchemaID *int `json:"schema_id"`
			}
		}
		if err := json.Unmarshal(r.Value, &v); err != nil {
			t.Fatalf("offset %d: %v: %s", r.Offset, err, r.Value)
		}
		wantID := 1
		if format == "as-written" {
			wantID = 0
		}
		if v.Source.SchemaID == nil || *v.Source.SchemaID != wantID {
			t.Errorf("offset %d: source schema_id %v, want %d: %s", r.Offset, v.Source.SchemaID, wantID, r.Value)
		}
		images, after = []json.RawMessage{v.Before, v.After}, v.After
	case "canal-json":
		var v struct {
			Data, Old []json.RawMessage
		}
		if err := json.Unmarshal(r.Value, &v); err != nil || len(v.Data) != 1 {
			t.Fatalf("offset %d: %v: %s", r.Offset, err, r.Value)
		}
		images, after = append(v.Data, v.Old...), v.Data[0]
	case "upsert":
		images, after = []json.RawMessage{r.Value}, r.Value
		if !bytes.HasPrefix(r.Key, []byte(`{"key_id":`)) {
			t.Errorf("offset %d: key %s, want it under the key's new name key_id", r.Offset, r.Key)
		}
	case "json":
		images = []json.RawMessage{r.Value}
		want = append(slices.Clone(want), "op")
		i := bytes.LastIndex(r.Value, []byte(`,"op":`))
		if i < 0 {
			t.Fatalf("offset %d: no op: %s", r.Offset, r.Value)
		}
		after = append(slices.Clone(r.Value[:i]), '}')
	}
	for _, img := range images {
		if len(img) == 0 || string(img) == "null" {
			continue
		}
		if got := objectKeys(t, img); !slices.Equal(got, want) {
			t.Errorf("%s offset %d: columns %v, want %v: %s", format, r.Offset, got, want, r.Value)
		}
	}
	return after
}

// objectKeys lists the keys of a JSON object in order.
func objectKeys(t *testing.T, obj []byte) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(obj))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("not a JSON object: %s", obj)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// consumeAllPartitions reads n records of every partition of a topic from
// the start, ordered by partition and offset.
func consumeAllPartitions(t *testing.T, addr, topic string, n int) []*kgo.Record {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	recs := consumeN(t, cl, n, 30*time.Second)
	slices.SortStableFunc(recs, func(a, b *kgo.Record) int {
		if a.Partition != b.Partition {
			return int(a.Partition - b.Partition)
		}
		return int(a.Offset - b.Offset)
	})
	return recs
}

// epochEnd asks OffsetForLeaderEpoch where epoch ends in partition p.
func epochEnd(t *testing.T, addr, topic string, p, epoch int32) int64 {
	t.Helper()
	req := kmsg.NewPtrOffsetForLeaderEpochRequest()
	req.ReplicaID = -1
	rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
	rp.Partition, rp.LeaderEpoch, rp.CurrentLeaderEpoch = p, epoch, -1
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, mustClient(t, addr))
	if err != nil {
		t.Fatal(err)
	}
	rpp := resp.Topics[0].Partitions[0]
	if rpp.ErrorCode != 0 {
		t.Fatalf("OffsetForLeaderEpoch(%s/%d, %d): error %d", topic, p, epoch, rpp.ErrorCode)
	}
	return rpp.EndOffset
}

// appendCurrentJSON appends rows, given as JSON in the table's current
// schema, as one snapshot.
func appendCurrentJSON(t *testing.T, cat catalog.Catalog, ident table.Identifier, rows string) {
	t.Helper()
	ctx := context.Background()
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, sc, strings.NewReader(rows))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	at := array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
	defer at.Release()
	if _, err := tbl.AppendTable(ctx, at, rec.NumRows(), nil); err != nil {
		t.Fatal(err)
	}
}
