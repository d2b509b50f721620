package produce

import (
	"context"
	"errors"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
)

// scanTable reads a table topic's rows with iceberg-go's scanner: id ->
// name.
func scanTable(t *testing.T, s *Service, topic string) map[int64]string {
	t.Helper()
	ident := []string{"kafka", topic}
	tbl, err := s.cat.LoadTable(context.Background(), ident)
	if err != nil {
		t.Fatal(err)
	}
	_, itr, err := tbl.Scan().ToArrowRecords(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[int64]string{}
	for rec, err := range itr {
		if err != nil {
			t.Fatal(err)
		}
		ids := rec.Column(0).(*array.Int64)
		names := rec.Column(1).(*array.String)
		for i := 0; i < int(rec.NumRows()); i++ {
			out[ids.Value(i)] = names.Value(i)
		}
		rec.Release()
	}
	return out
}

func rec(key, value string) Record {
	r := Record{TimestampMs: 1}
	if key != "" {
		r.Key = []byte(key)
	}
	if value != "" {
		r.Value = []byte(value)
	}
	return r
}

// Upsert records (Flink's upsert-kafka sink) become the table's rows: a
// value upserts, a tombstone deletes, the key's fields fill a value that
// leaves them out; a record that does not fit fails its batch, and nothing
// of that batch is written.
func TestTableTopicAppliesUpsertRecords(t *testing.T) {
	cat, _ := openCatalog(t)
	s, _ := newService(t, cat)
	ctx := context.Background()
	cfg := map[string]string{ConfigSchema: "id long, name string", ConfigPrimaryKey: "id", "lakegw.format": "upsert"}
	if err := s.CreateTableTopic(ctx, "users", 2, cfg, false); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateTableTopic(ctx, "users", 2, cfg, false); !errors.Is(err, ErrTopicExists) {
		t.Fatalf("second create: %v", err)
	}
	batch := Batch{Partition: 0, ProducerID: NoProducer, Records: []Record{
		rec(`{"id":1}`, `{"id":1,"name":"ann"}`),
		rec(`{"id":2}`, `{"name":"bob"}`),
		rec(`{"id":3}`, `{"id":3,"name":"cy"}`),
		rec(`{"id":1}`, `{"id":1,"name":"anne"}`),
		rec(`{"id":3}`, ``),
	}}
	res, _ := s.Produce(ctx, "users", []Batch{batch})
	if res[0].Err != nil {
		t.Fatalf("produce: %v", res[0].Err)
	}
	if got := scanTable(t, s, "users"); len(got) != 2 || got[1] != "anne" || got[2] != "bob" {
		t.Fatalf("table rows %v, want 1=anne 2=bob", got)
	}
	bad := Batch{Partition: 1, ProducerID: NoProducer, Records: []Record{
		rec(`{"id":4}`, `{"id":4,"name":"dee"}`),
		rec(`{"id":5}`, `{"id":"five","name":"eve"}`),
	}}
	res, _ = s.Produce(ctx, "users", []Batch{bad})
	var re *RecordError
	if !errors.As(res[0].Err, &re) || re.Index != 1 || !errors.Is(res[0].Err, ErrInvalidRecord) {
		t.Fatalf("bad batch: %v, want record 1 refused", res[0].Err)
	}
	if got := scanTable(t, s, "users"); len(got) != 2 {
		t.Fatalf("a refused batch wrote rows: %v", got)
	}
}

func TestRowOpsOfEveryFormat(t *testing.T) {
	for _, c := range []struct {
		format, value string
		want          []rowOp
	}{
		{"json", `{"id":1,"name":"a"}`, []rowOp{{row: map[string]any{"id": "1", "name": "a"}}}},
		{"debezium-json", `{"before":null,"after":{"id":1},"op":"c"}`, []rowOp{{row: map[string]any{"id": "1"}}}},
		{"debezium-json", `{"before":{"id":1},"after":null,"op":"d"}`, []rowOp{{row: map[string]any{"id": "1"}, del: true}}},
		{"debezium-json", `{"payload":{"after":{"id":2},"op":"u"}}`, []rowOp{{row: map[string]any{"id": "2"}}}},
		{"canal-json", `{"data":[{"id":1},{"id":2}],"type":"DELETE"}`, []rowOp{{row: map[string]any{"id": "1"}, del: true}, {row: map[string]any{"id": "2"}, del: true}}},
	} {
		r := rec("", c.value)
		got, err := rowOps(c.format, &r)
		if err != nil || len(got) != len(c.want) {
			t.Fatalf("%s %s: %v %v", c.format, c.value, got, err)
		}
		for i := range got {
			if got[i].del != c.want[i].del || len(got[i].row) != len(c.want[i].row) {
				t.Fatalf("%s %s: op %d %+v, want %+v", c.format, c.value, i, got[i], c.want[i])
			}
			for k, v := range c.want[i].row {
				if n, ok := got[i].row[k]; !ok || toString(n) != v {
					t.Fatalf("%s %s: %s=%v, want %v", c.format, c.value, k, n, v)
				}
			}
		}
	}
	for format, value := range map[string]string{"json": `[1]`, "debezium-json": `{"op":"x"}`, "canal-json": `{"type":"INSERT"}`, "upsert": ``} {
		r := rec("", value)
		if _, err := rowOps(format, &r); err == nil {
			t.Errorf("%s %q: accepted", format, value)
		}
	}
}

func toString(v any) string {
	if n, ok := v.(interface{ String() string }); ok {
		return n.String()
	}
	s, _ := v.(string)
	return s
}

// With lakegw.schema.auto-evolve a field the table lacks becomes an
// optional column (long, double, string, boolean by its JSON value), older
// rows null; without it the record is refused.
func TestTableTopicAutoEvolvesItsSchema(t *testing.T) {
	cat, _ := openCatalog(t)
	s, _ := newService(t, cat)
	ctx := context.Background()
	base := map[string]string{ConfigSchema: "id long, name string", ConfigPrimaryKey: "id", "lakegw.format": "json"}
	strict := map[string]string{ConfigAutoEvolve: "false"}
	evolving := map[string]string{ConfigAutoEvolve: "true"}
	for name, extra := range map[string]map[string]string{"strict": strict, "evolving": evolving} {
		cfg := map[string]string{}
		for k, v := range base {
			cfg[k] = v
		}
		for k, v := range extra {
			cfg[k] = v
		}
		if err := s.CreateTableTopic(ctx, name, 1, cfg, false); err != nil {
			t.Fatal(err)
		}
	}
	batch := func() []Batch {
		return []Batch{{Partition: 0, ProducerID: NoProducer, Records: []Record{
			rec("", `{"id":1,"name":"a"}`),
			rec("", `{"id":2,"name":"b","score":1.5,"vip":true,"note":null}`),
		}}}
	}
	if res, _ := s.Produce(ctx, "strict", batch()); !errors.Is(res[0].Err, ErrInvalidRecord) {
		t.Fatalf("strict topic took a record with new fields: %v", res[0].Err)
	}
	if res, _ := s.Produce(ctx, "evolving", batch()); res[0].Err != nil {
		t.Fatalf("evolving topic: %v", res[0].Err)
	}
	tbl, err := cat.LoadTable(ctx, []string{"kafka", "evolving"})
	if err != nil {
		t.Fatal(err)
	}
	sc := tbl.Schema()
	for name, typ := range map[string]string{"score": "double", "vip": "boolean"} {
		f, ok := sc.FindFieldByName(name)
		if !ok || f.Type.String() != typ || f.Required {
			t.Fatalf("column %s: %v (found %v), want optional %s", name, f, ok, typ)
		}
	}
	if _, ok := sc.FindFieldByName("note"); ok {
		t.Fatal("a field seen only as null became a column")
	}
	if got := scanTable(t, s, "evolving"); len(got) != 2 {
		t.Fatalf("rows %v", got)
	}
	_, itr, err := tbl.Scan().ToArrowRecords(ctx)
	if err != nil {
		t.Fatal(err)
	}
	scores := map[int64]string{}
	for r, err := range itr {
		if err != nil {
			t.Fatal(err)
		}
		ids := r.Column(0).(*array.Int64)
		col := r.Column(r.Schema().FieldIndices("score")[0])
		for i := 0; i < int(r.NumRows()); i++ {
			scores[ids.Value(i)] = col.ValueStr(i)
		}
		r.Release()
	}
	if scores[1] != array.NullValueStr || scores[2] != "1.5" {
		t.Fatalf("scores %v, want 1=null 2=1.5", scores)
	}
}

// An append table topic (a schema, no primary key) appends one row per
// record at dense offsets; a record with a field the table lacks, without
// a required column, of the wrong type or deleting is refused with its
// batch.
func TestAppendTableTopicAppendsRows(t *testing.T) {
	cat, _ := openCatalog(t)
	s, _ := newService(t, cat)
	ctx := context.Background()
	cfg := map[string]string{ConfigSchema: "id long not null, name string"}
	if err := s.CreateTableTopic(ctx, "events", 2, cfg, false); !errors.Is(err, ErrInvalidPartitions) {
		t.Fatalf("two partitions: %v", err)
	}
	if err := s.CreateTableTopic(ctx, "events", 1, cfg, false); err != nil {
		t.Fatal(err)
	}
	good := Batch{Partition: 0, ProducerID: NoProducer, Records: []Record{rec("", `{"id":1,"name":"a"}`), rec("", `{"id":2}`)}}
	for round := range 2 {
		res, _ := s.Produce(ctx, "events", []Batch{good})
		if res[0].Err != nil || res[0].BaseOffset != int64(2*round) {
			t.Fatalf("round %d: %+v", round, res[0])
		}
	}
	for name, bad := range map[string]string{"unknown field": `{"id":3,"x":1}`, "missing required": `{"name":"c"}`, "wrong type": `{"id":"three"}`} {
		res, _ := s.Produce(ctx, "events", []Batch{{Partition: 0, ProducerID: NoProducer, Records: []Record{rec("", bad)}}})
		if !errors.Is(res[0].Err, ErrInvalidRecord) {
			t.Errorf("%s: %v, want ErrInvalidRecord", name, res[0].Err)
		}
	}
	tbl, err := cat.LoadTable(ctx, []string{"kafka", "events"})
	if err != nil {
		t.Fatal(err)
	}
	_, itr, err := tbl.Scan().ToArrowRecords(ctx)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for r, err := range itr {
		if err != nil {
			t.Fatal(err)
		}
		n += int(r.NumRows())
		r.Release()
	}
	if n != 4 {
		t.Fatalf("the table holds %d rows, want 4", n)
	}
}

// An append table topic with auto-evolve adds a new field's column; a
// batch prepared before the evolution is written in the new schema (its
// rows null there).
func TestAppendTableTopicAutoEvolves(t *testing.T) {
	cat, _ := openCatalog(t)
	s, _ := newService(t, cat)
	ctx := context.Background()
	if err := s.CreateTableTopic(ctx, "grow", 1, map[string]string{ConfigSchema: "id long", ConfigAutoEvolve: "true"}, false); err != nil {
		t.Fatal(err)
	}
	res, _ := s.Produce(ctx, "grow", []Batch{
		{Partition: 0, ProducerID: NoProducer, Records: []Record{rec("", `{"id":1}`)}},
		{Partition: 0, ProducerID: NoProducer, Records: []Record{rec("", `{"id":2,"score":1.5}`)}},
	})
	if res[0].Err != nil || res[1].Err != nil || res[0].BaseOffset != 0 || res[1].BaseOffset != 1 {
		t.Fatalf("produce: %+v", res)
	}
	tbl, err := cat.LoadTable(ctx, []string{"kafka", "grow"})
	if err != nil {
		t.Fatal(err)
	}
	_, itr, err := tbl.Scan().ToArrowRecords(ctx)
	if err != nil {
		t.Fatal(err)
	}
	scores := map[int64]string{}
	for r, err := range itr {
		if err != nil {
			t.Fatal(err)
		}
		ids := r.Column(0).(*array.Int64)
		col := r.Column(r.Schema().FieldIndices("score")[0])
		for i := 0; i < int(r.NumRows()); i++ {
			scores[ids.Value(i)] = col.ValueStr(i)
		}
		r.Release()
	}
	if scores[1] != array.NullValueStr || scores[2] != "1.5" {
		t.Fatalf("scores %v, want 1=null 2=1.5", scores)
	}
}
