package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lakegw/lakegw/internal/lsmmodel"
	"github.com/lakegw/lakegw/lake"
	icefiles "github.com/lakegw/lakegw/lake/files"
	"github.com/lakegw/lakegw/lsm"
)

// The randomized model test of lakegw LSM tables, end to end: streams of
// upserts, deletes and partial updates over many keys and several buckets,
// interleaved with compactions and crashing writers. After every commit the
// table read by iceberg-go (and by PyIceberg when installed) equals the
// model, the topic replayed through the Kafka protocol from the earliest
// offset equals the model with every before-image true, and point lookups
// equal the model.

var lsmSchema = lsmmodel.Schema

// lsmRow renders a row canonically: "id|name|qty|price", null as "null".
func lsmRow(id, name, qty, price any) string {
	return strings.Join([]string{lsmVal(id), lsmVal(name), lsmVal(qty), lsmVal(price)}, "|")
}

func lsmVal(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case json.Number:
		if f, err := x.Float64(); err == nil && strings.ContainsAny(string(x), ".eE") {
			return strconv.FormatFloat(f, 'g', -1, 64)
		}
		return string(x)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	return fmt.Sprint(v)
}

func lsmRowOfMap(m map[string]any) string {
	return lsmRow(m["id"], m["name"], m["qty"], m["price"])
}

// newLSMCatalog opens the embedded catalog of a fresh data dir with
// namespace ns.
func newLSMCatalog(t *testing.T, ns string) (string, catalog.Catalog) {
	t.Helper()
	dataDir := t.TempDir()
	cat, err := lake.OpenCatalog(context.Background(), dataDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.CreateNamespace(context.Background(), table.Identifier{ns}, nil); err != nil {
		t.Fatal(err)
	}
	return dataDir, cat
}

// lsmModel is the expected table, partial-update semantics.
type lsmModel = lsmmodel.Model

// renderLsmModel renders the model as id -> "id|name|qty|price".
func renderLsmModel(m lsmModel) map[string]string {
	out := map[string]string{}
	for id, r := range m {
		out[strconv.FormatInt(id, 10)] = lsmRow(r[0], r[1], r[2], r[3])
	}
	return out
}

// randomWrites fills a writer with n random writes over keys ids and
// applies them to next.
func randomWrites(t *testing.T, rng *rand.Rand, w *lsm.Writer, next lsmModel, n, keys int) {
	t.Helper()
	if err := lsmmodel.RandomWrites(rng, w, next, n, keys); err != nil {
		t.Fatal(err)
	}
}

// lsmReplayer consumes the topic through the Kafka protocol and applies
// each debezium-json event, checking before-images.
type lsmReplayer struct {
	t     *testing.T
	cl    *kgo.Client
	topic string
	state map[string]string
	got   int64
}

func newLsmReplayer(t *testing.T, addr, topic string, partitions int) *lsmReplayer {
	t.Helper()
	assign := map[int32]kgo.Offset{}
	for p := range partitions {
		assign[int32(p)] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: assign}),
		kgo.FetchMaxWait(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return &lsmReplayer{t: t, cl: cl, topic: topic, state: map[string]string{}}
}

// consumeTo reads until want records have been applied.
func (r *lsmReplayer) consumeTo(want int64, g *gateway) {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for r.got < want {
		fs := r.cl.PollFetches(ctx)
		if ctx.Err() != nil {
			r.t.Fatalf("%s: %d of %d records before the timeout; gateway logs:\n%s", r.topic, r.got, want, fidTail(g.Logs(), 30))
		}
		for _, e := range fs.Errors() {
			r.t.Fatalf("fetch %s/%d: %v", e.Topic, e.Partition, e.Err)
		}
		fs.EachRecord(func(rec *kgo.Record) { r.apply(rec) })
	}
	if r.got != want {
		r.t.Fatalf("%s: %d records, want %d", r.topic, r.got, want)
	}
}

func (r *lsmReplayer) apply(rec *kgo.Record) {
	r.t.Helper()
	r.got++
	dec := json.NewDecoder(strings.NewReader(string(rec.Value)))
	dec.UseNumber()
	var v struct {
		Before map[string]any `json:"before"`
		After  map[string]any `json:"after"`
		Op     string         `json:"op"`
	}
	if err := dec.Decode(&v); err != nil {
		r.t.Fatalf("%s/%d@%d: %v: %s", r.topic, rec.Partition, rec.Offset, err, rec.Value)
	}
	var key string
	if v.Before != nil {
		before := lsmRowOfMap(v.Before)
		key = lsmVal(v.Before["id"])
		if r.state[key] != before {
			r.t.Fatalf("%s/%d@%d op %s: before-image %s, but the replayed row is %q", r.topic, rec.Partition, rec.Offset, v.Op, before, r.state[key])
		}
	}
	switch v.Op {
	case "c":
		key = lsmVal(v.After["id"])
		if prev, ok := r.state[key]; ok {
			r.t.Fatalf("%s/%d@%d: insert of live key %s (%s)", r.topic, rec.Partition, rec.Offset, key, prev)
		}
		r.state[key] = lsmRowOfMap(v.After)
	case "u":
		if v.Before == nil || lsmVal(v.After["id"]) != key {
			r.t.Fatalf("%s/%d@%d: update without matching before-image: %s", r.topic, rec.Partition, rec.Offset, rec.Value)
		}
		r.state[key] = lsmRowOfMap(v.After)
	case "d":
		if v.Before == nil {
			r.t.Fatalf("%s/%d@%d: delete without before-image", r.topic, rec.Partition, rec.Offset)
		}
		delete(r.state, key)
	default:
		r.t.Fatalf("%s/%d@%d: op %q", r.topic, rec.Partition, rec.Offset, v.Op)
	}
}

// lsmScan reads the table's current snapshot with iceberg-go.
func lsmScan(t *testing.T, cat catalog.Catalog, ident table.Identifier) map[string]string {
	t.Helper()
	ctx := context.Background()
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	if tbl.CurrentSnapshot() == nil {
		return out
	}
	_, it, err := tbl.Scan().ToArrowRecords(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for rec, err := range it {
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			vals := make([]any, 4)
			for c := range vals {
				col := rec.Column(c)
				if col.IsNull(i) {
					continue
				}
				switch a := col.(type) {
				case *array.Int64:
					vals[c] = a.Value(i)
				case *array.String:
					vals[c] = a.Value(i)
				case *array.Float64:
					vals[c] = a.Value(i)
				default:
					t.Fatalf("column %d is %s", c, col.DataType())
				}
			}
			row := lsmRow(vals[0], vals[1], vals[2], vals[3])
			key := lsmVal(vals[0])
			if prev, dup := out[key]; dup {
				t.Fatalf("iceberg-go scan: key %s twice (%s, %s)", key, prev, row)
			}
			out[key] = row
		}
		rec.Release()
	}
	return out
}

// lsmDeleteFiles counts the live deletion vectors and position delete files
// of the current snapshot, checking that no data file has two DVs.
func lsmDeleteFiles(t *testing.T, cat catalog.Catalog, ident table.Identifier) (dvs, posFiles int) {
	t.Helper()
	ctx := context.Background()
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		return 0, 0
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	mans, err := snap.Manifests(fs)
	if err != nil {
		t.Fatal(err)
	}
	dvOf := map[string]bool{}
	for _, m := range mans {
		entries, err := icefiles.ManifestEntries(fs, m, true)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			df := e.DataFile()
			switch {
			case df.ContentType() == iceberg.EntryContentEqDeletes:
				t.Fatalf("snapshot %d has equality deletes", snap.SnapshotID)
			case table.IsDeletionVector(df):
				dvs++
				if ref := df.ReferencedDataFile(); ref == nil || dvOf[*ref] {
					t.Fatalf("snapshot %d: a second (or unreferenced) DV %s", snap.SnapshotID, df.FilePath())
				} else {
					dvOf[*ref] = true
				}
			case df.ContentType() == iceberg.EntryContentPosDeletes:
				posFiles++
			}
		}
	}
	return dvs, posFiles
}

// pyScanner is a long-lived PyIceberg process that scans the table each
// time it reads a line on stdin and answers with one JSON line of rows.
type pyScanner struct {
	cmd    *exec.Cmd
	stderr *strings.Builder
	in     io.WriteCloser
	out    *bufio.Scanner
}

const pyScanProgram = `
import json, os, sys
from pyiceberg.catalog.sql import SqlCatalog
d, name = sys.argv[1], sys.argv[2]
cat = SqlCatalog("lakegw", uri="sqlite:///" + os.path.join(d, "catalog.db"), warehouse="file://" + os.path.join(d, "warehouse"))
for _ in sys.stdin:
    tbl = cat.load_table(name)
    rows = tbl.scan().to_arrow().to_pylist() if tbl.current_snapshot() else []
    print(json.dumps(rows), flush=True)
`

func startPyScanner(t *testing.T, dataDir, name string) *pyScanner {
	t.Helper()
	python, err := exec.LookPath("python3")
	if err == nil {
		err = exec.Command(python, "-c", "import pyiceberg.catalog.sql, pyarrow").Run()
	}
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("PyIceberg is not installed, but CI must have it (scripts/install-test-deps.sh)")
		}
		t.Logf("PyIceberg is not installed: skipping the PyIceberg scans")
		return nil
	}
	cmd := exec.Command(python, "-c", pyScanProgram, dataDir, name)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		in.Close()
		_ = cmd.Wait()
	})
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	return &pyScanner{cmd: cmd, stderr: &stderr, in: in, out: sc}
}

func (p *pyScanner) scan(t *testing.T) map[string]string {
	t.Helper()
	if _, err := io.WriteString(p.in, "scan\n"); err != nil {
		t.Fatalf("PyIceberg scanner: %v", err)
	}
	if !p.out.Scan() {
		t.Fatalf("PyIceberg scanner ended: %v (stderr: %s)", p.out.Err(), p.stderr)
	}
	dec := json.NewDecoder(strings.NewReader(p.out.Text()))
	dec.UseNumber()
	var rows []map[string]any
	if err := dec.Decode(&rows); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, r := range rows {
		key := lsmVal(r["id"])
		if _, dup := out[key]; dup {
			t.Fatalf("PyIceberg scan: key %s twice", key)
		}
		out[key] = lsmRowOfMap(r)
	}
	return out
}

func diffRows(got, want map[string]string) string {
	var lines []string
	for k, w := range want {
		if got[k] != w {
			lines = append(lines, fmt.Sprintf("key %s: got %q want %q", k, got[k], w))
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			lines = append(lines, fmt.Sprintf("key %s: got %q, want no row", k, g))
		}
	}
	sort.Strings(lines)
	if len(lines) > 10 {
		lines = append(lines[:10], fmt.Sprintf("... %d more", len(lines)-10))
	}
	return strings.Join(lines, "\n")
}

// TestLsmModelThroughKafka runs the model on a v2 table (position delete
// files) and, shorter, on a v3 table (deletion vectors).
func TestLsmModelThroughKafka(t *testing.T) {
	t.Run("v2", func(t *testing.T) { testLsmModelThroughKafka(t, 2, 25) })
	t.Run("v3", func(t *testing.T) { testLsmModelThroughKafka(t, 3, 12) })
}

func testLsmModelThroughKafka(t *testing.T, version, rounds int) {
	ctx := context.Background()
	const buckets, keys = 3, 80
	ident := table.Identifier{"lsm", "model"}
	dataDir, cat := newLSMCatalog(t, ident[0])
	tb, err := lsm.Create(ctx, cat, ident, lsmSchema, lsm.CreateOptions{PrimaryKey: []string{"id"}, Buckets: buckets,
		MergeEngine: lsm.EnginePartialUpdate, FormatVersion: version},
		lsm.Options{Compaction: lsm.CompactionOptions{Trigger: 3}})
	if err != nil {
		t.Fatal(err)
	}
	crashing, err := lsm.Open(ctx, cat, ident, lsm.Options{BeforeCommit: func(context.Context) error { return errors.New("simulated crash") }})
	if err != nil {
		t.Fatal(err)
	}
	g := startGateway(t, dataDir, "")
	py := startPyScanner(t, dataDir, "lsm.model")
	rp := newLsmReplayer(t, g.addr, "lsm.model", buckets)
	rng := rand.New(rand.NewPCG(42, 4))
	m := lsmModel{}
	var events int64
	if testing.Short() {
		rounds = min(rounds, 8)
	}
	commits, crashes, compactions, withDeletes := 0, 0, 0, 0
	for round := 0; round < rounds; round++ {
		crash := rng.IntN(6) == 0
		target := tb
		if crash {
			target = crashing
		}
		w, err := target.NewWriter(ctx)
		if err != nil {
			t.Fatal(err)
		}
		next := m.Clone()
		randomWrites(t, rng, w, next, 5+rng.IntN(60), keys)
		res, err := w.Commit(ctx)
		switch {
		case crash && err == nil:
			t.Fatalf("round %d: the crashing writer committed", round)
		case crash:
			crashes++
		case err != nil:
			t.Fatalf("round %d: %v", round, err)
		default:
			commits++
			m = next
			for _, n := range res.Counts {
				events += n
			}
		}
		if rng.IntN(4) == 0 {
			cr, err := tb.Compact(ctx, rng.IntN(3) == 0)
			if err != nil {
				t.Fatalf("round %d: compaction: %v", round, err)
			}
			if cr.SnapshotID != 0 {
				compactions++
			}
		}
		dvs, posFiles := lsmDeleteFiles(t, cat, ident)
		if version == 3 && posFiles > 0 || version == 2 && dvs > 0 {
			t.Fatalf("round %d: a v%d snapshot with %d deletion vectors and %d position delete files", round, version, dvs, posFiles)
		}
		if dvs+posFiles > 0 {
			withDeletes++
		}
		want := renderLsmModel(m)
		if d := diffRows(lsmScan(t, cat, ident), want); d != "" {
			t.Fatalf("round %d: iceberg-go scan differs from the model:\n%s", round, d)
		}
		if py != nil {
			if d := diffRows(py.scan(t), want); d != "" {
				t.Fatalf("round %d: PyIceberg scan differs from the model:\n%s", round, d)
			}
		}
		rp.consumeTo(events, g)
		if d := diffRows(rp.state, want); d != "" {
			t.Fatalf("round %d: topic replay differs from the model:\n%s", round, d)
		}
		for id := int64(0); id < keys; id += 3 {
			row, ok, err := tb.Get(ctx, map[string]any{"id": id})
			if err != nil {
				t.Fatal(err)
			}
			w, has := want[strconv.FormatInt(id, 10)]
			if ok != has || ok && lsmRowOfMap(row) != w {
				t.Fatalf("round %d: Get(%d) = %v %v, want %q %v", round, id, row, ok, w, has)
			}
		}
	}
	if withDeletes == 0 {
		t.Fatalf("no snapshot had delete files")
	}
	// A fresh consumer from the earliest offsets replays to the model too.
	fresh := newLsmReplayer(t, g.addr, "lsm.model", buckets)
	fresh.consumeTo(events, g)
	if d := diffRows(fresh.state, renderLsmModel(m)); d != "" {
		t.Fatalf("fresh replay differs from the model:\n%s", d)
	}
	t.Logf("v%d, %d rounds: %d commits, %d crashed writers, %d compactions, %d change events, %d live keys", version, rounds, commits, crashes, compactions, events, len(m))
}
