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
