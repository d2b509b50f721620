package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os/exec"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// pyReadProgram reads tables of the gateway's embedded catalog with
// PyIceberg and prints each one's rows as JSON (bytes base64-encoded).
const pyReadProgram = `
import base64, json, os, sys
from pyiceberg.catalog.sql import SqlCatalog
d = sys.argv[1]
cat = SqlCatalog("lakegw", uri="sqlite:///" + os.path.join(d, "catalog.db"), warehouse="file://" + os.path.join(d, "warehouse"))
def plain(v):
    if isinstance(v, bytes):
        return base64.b64encode(v).decode()
    if isinstance(v, list):
        return [plain(x) for x in v]
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    if hasattr(v, "isoformat"):
        return v.isoformat()
    if v is None or isinstance(v, (int, float, str, bool)):
        return v
    return str(v)
out = {}
for name in sys.argv[2:]:
    out[name] = [plain(r) for r in cat.load_table(name).scan().to_arrow().to_pylist()]
print(json.dumps(out))
`

// PyIceberg, an independent Iceberg reader, reads what producers wrote: a
// raw topic's rows are the produced records (partition, offset, key, value,
// headers), and a table topic's rows are the upserts it was sent.
func TestPyIcebergReadsProducedTables(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err == nil {
		err = exec.Command(python, "-c", "import pyiceberg.catalog.sql, pyarrow").Run()
	}
	if err != nil {
		skipOrFailMissing(t, "PyIceberg (pip install -r e2e/writers/pyiceberg/requirements.txt)")
	}
	dir := t.TempDir()
	g := startGateway(t, dir, "", "--commit-interval", "20ms")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	createRawTopic(t, g.addr, "py_raw", 2)
	adm := kadm.NewClient(mustClient(t, g.addr))
	cfg := map[string]*string{"lakegw.schema": kadm.StringPtr("id long, name string"),
		"lakegw.primary-key": kadm.StringPtr("id"), "lakegw.format": kadm.StringPtr("upsert")}
	if resp, err := adm.CreateTopics(ctx, 1, 1, cfg, "py_pk"); err != nil || resp["py_pk"].Err != nil {
		t.Fatalf("create table topic: %v %v", err, resp["py_pk"].Err)
	}
	prod, err := kgo.NewClient(kgo.SeedBrokers(g.addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer prod.Close()
	raw := rawRecords("py_raw", 60, 2, 0)
	if err := prod.ProduceSync(ctx, raw...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	var pk []*kgo.Record
	for i := range 10 {
		pk = append(pk, &kgo.Record{Topic: "py_pk", Key: []byte(fmt.Sprintf(`{"id":%d}`, i%4)), Value: []byte(fmt.Sprintf(`{"id":%d,"name":"v%d"}`, i%4, i))})
	}
	if err := prod.ProduceSync(ctx, pk...).FirstErr(); err != nil {
		t.Fatal(err)
	}

	out, err := exec.CommandContext(ctx, python, "-c", pyReadProgram, dir, "kafka.py_raw", "kafka.py_pk").CombinedOutput()
	if err != nil {
		t.Fatalf("PyIceberg read: %v\n%s", err, out)
	}
	var tables map[string][]map[string]any
	if err := json.Unmarshal(out, &tables); err != nil {
		t.Fatalf("PyIceberg output %q: %v", out, err)
	}
	rows := tables["kafka.py_raw"]
	if len(rows) != len(raw) {
		t.Fatalf("PyIceberg reads %d raw rows, %d were produced", len(rows), len(raw))
	}
	byPos := map[[2]int64]map[string]any{}
	for _, r := range rows {
		byPos[[2]int64{int64(r["partition"].(float64)), int64(r["offset"].(float64))}] = r
	}
	b64 := func(b []byte) any {
		if b == nil {
			return nil
		}
		return base64.StdEncoding.EncodeToString(b)
	}
	for _, p := range raw {
		r := byPos[[2]int64{int64(p.Partition), p.Offset}]
		if r == nil || r["key"] != b64(p.Key) || r["value"] != b64(p.Value) {
			t.Fatalf("partition %d offset %d: PyIceberg reads %v, produced key %q value %q", p.Partition, p.Offset, r, p.Key, p.Value)
		}
		hs, _ := r["headers"].([]any)
		if len(hs) != len(p.Headers) {
			t.Fatalf("partition %d offset %d: PyIceberg reads headers %v, produced %v", p.Partition, p.Offset, hs, p.Headers)
		}
		for i, h := range p.Headers {
			m := hs[i].(map[string]any)
			if m["key"] != h.Key || m["value"] != b64(h.Value) {
				t.Fatalf("partition %d offset %d header %d: PyIceberg reads %v, produced %+v", p.Partition, p.Offset, i, m, h)
			}
		}
	}
	got := map[float64]string{}
	for _, r := range tables["kafka.py_pk"] {
		got[r["id"].(float64)] = r["name"].(string)
	}
	want := map[float64]string{0: "v8", 1: "v9", 2: "v6", 3: "v7"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("PyIceberg reads the table topic as %v, want %v", got, want)
	}
}
