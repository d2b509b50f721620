package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lakegw/lakegw/internal/pgtest"
	"github.com/lakegw/lakegw/internal/s3test"
	"github.com/lakegw/lakegw/lake"
)

// s3LakeStep is one commit of the history both twins are given.
type s3LakeStep struct {
	what  string
	apply func(ctx context.Context, tbl *table.Table) (*table.Table, error)
	// counts are the events the commit must yield.
	counts map[string]int
	// uncountedOnMoR leaves the merge-on-read table's events of the
	// commit to the oracle alone.
	uncountedOnMoR bool
}

// s3LakeRows builds an Arrow table of eventsSchema rows for ids, each
// named with tag.
func s3LakeRows(t *testing.T, tag string, ids ...int64) arrow.Table {
	t.Helper()
	sc, err := table.SchemaToArrowSchema(eventsSchema, nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for _, id := range ids {
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("%s-%d", tag, id))
		b.Field(2).(*array.Float64Builder).Append(float64(id) * 1.25)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	return array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
}

func s3LakeRange(from, to int64) []int64 {
	ids := make([]int64, 0, to-from)
	for id := from; id < to; id++ {
		ids = append(ids, id)
	}
	return ids
}

// s3LakeHistory is appends, deletes (position deletes or rewritten files,
// by the table's write.delete.mode) and an update of one key, each its own
// snapshot. The deletes touch one file each but the last, which touches
// two.
func s3LakeHistory(t *testing.T) []s3LakeStep {
	appendRows := func(ids ...int64) func(context.Context, *table.Table) (*table.Table, error) {
		return func(ctx context.Context, tbl *table.Table) (*table.Table, error) {
			at := s3LakeRows(t, "name", ids...)
			defer at.Release()
			return tbl.AppendTable(ctx, at, 700, nil)
		}
	}
	deleteWhere := func(f iceberg.BooleanExpression) func(context.Context, *table.Table) (*table.Table, error) {
		return func(ctx context.Context, tbl *table.Table) (*table.Table, error) {
			return tbl.Delete(ctx, f, nil)
		}
	}
	id := iceberg.Reference("id")
	return []s3LakeStep{
		{what: "append 5", apply: appendRows(s3LakeRange(1, 6)...), counts: map[string]int{"c": 5}},
		{what: "append 2500", apply: appendRows(s3LakeRange(6, 2506)...), counts: map[string]int{"c": 2500}},
		{what: "delete id < 4", apply: deleteWhere(iceberg.LessThan(id, int64(4))), counts: map[string]int{"d": 3}},
		{what: "delete 600 <= id < 800", apply: deleteWhere(iceberg.NewAnd(iceberg.GreaterThanEqual(id, int64(600)), iceberg.LessThan(id, int64(800)))),
			counts: map[string]int{"d": 200}},
		{what: "append 7", apply: appendRows(s3LakeRange(2506, 2513)...), counts: map[string]int{"c": 7}},
		{what: "update id 100", apply: func(ctx context.Context, tbl *table.Table) (*table.Table, error) {
			at := s3LakeRows(t, "renamed", 100)
			defer at.Release()
			tx := tbl.NewTransaction()
			if err := tx.OverwriteTable(ctx, at, 10, nil, table.WithOverwriteFilter(iceberg.EqualTo(id, int64(100)))); err != nil {
				return nil, err
			}
			return tx.Commit(ctx)
		}, counts: map[string]int{"u": 1},
			// iceberg-go overwrites by rewriting the file of id 100
			// whatever the delete mode, and v0.7.0 rewrites it without
			// its position deletes: on the merge-on-read table the 200
			// rows deleted above come back as inserts (the oracle's
			// read has them too). That count is iceberg-go's to fix,
			// not this test's to pin.
			uncountedOnMoR: true},
		{what: "delete id in (5, 2510)", apply: deleteWhere(iceberg.IsIn(id, int64(5), int64(2510))), counts: map[string]int{"d": 2}},
	}
}

// s3LakeWrite creates ns.name in cat with the given delete mode and
// commits the history to it, returning the snapshot of each step.
func s3LakeWrite(t *testing.T, cat catalog.Catalog, ns, name, deleteMode string, steps []s3LakeStep) (*table.Table, []int64) {
	t.Helper()
	ctx := context.Background()
	if err := cat.CreateNamespace(ctx, table.Identifier{ns}, nil); err != nil {
		t.Logf("create namespace: %v (continuing)", err)
	}
	tbl, err := cat.CreateTable(ctx, table.Identifier{ns, name}, eventsSchema, catalog.WithProperties(iceberg.Properties{
		"format-version":    "2",
		"write.delete.mode": deleteMode,
	}))
	if err != nil {
		t.Fatalf("create %s.%s: %v", ns, name, err)
	}
	var snaps []int64
	for _, s := range steps {
		if tbl, err = s.apply(ctx, tbl); err != nil {
			t.Fatalf("%s.%s: %s: %v", ns, name, s.what, err)
		}
		snaps = append(snaps, tbl.CurrentSnapshot().SnapshotID)
	}
	return tbl, snaps
}

// s3LakeComparable is a record as two tables given the same history must
// serve it: the snapshot ids and commit times, which differ between them,
// left out.
func s3LakeComparable(t *testing.T, r *kgo.Record) string {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal(r.Value, &v); err != nil {
		t.Fatalf("offset %d: value is not JSON: %v: %s", r.Offset, err, r.Value)
	}
	delete(v, "ts_ms")
	if src, ok := v["source"].(map[string]any); ok {
		for k := range src {
			if strings.Contains(k, "snapshot") || strings.HasPrefix(k, "ts") {
				delete(src, k)
			}
		}
		delete(src, "table") // the topic name, which differs
	}
	value, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var hs []string
	for _, h := range r.Headers {
		if strings.Contains(h.Key, "snapshot") || strings.Contains(h.Key, "timestamp") {
			continue
		}
		hs = append(hs, h.Key+"="+string(h.Value))
	}
	return fmt.Sprintf("key %s headers %v value %s", r.Key, hs, value)
}

// s3LakeBySnapshot groups records by the snapshot they come from, in
// offset order, each group led by its offset range and then sorted.
func s3LakeBySnapshot(t *testing.T, recs []*kgo.Record) [][]string {
	t.Helper()
	var out [][]string
	var first int64
	for i, r := range recs {
		if i == 0 || header(r, "lakegw.snapshot-id") != header(recs[i-1], "lakegw.snapshot-id") {
			if len(out) > 0 {
				out[len(out)-1][0] = fmt.Sprintf("offsets [%d, %d)", first, r.Offset)
			}
			out = append(out, []string{""})
			first = r.Offset
		}
		g := &out[len(out)-1]
		*g = append(*g, s3LakeComparable(t, r))
	}
	if len(recs) > 0 {
		out[len(out)-1][0] = fmt.Sprintf("offsets [%d, %d)", first, recs[len(recs)-1].Offset+1)
	}
	for _, g := range out {
		slices.Sort(g[1:])
	}
	return out
}

func s3LakeHead(g []string) string {
	if len(g) > 4 {
		return strings.Join(g[:4], "\n    ") + fmt.Sprintf("\n    ... %d more", len(g)-4)
	}
	return strings.Join(g, "\n    ")
}

// TestServesALakeOnS3WithCatalogOnPostgres runs lakegw on a lake in an
// S3 server (versitygw) with its SQL catalog in PostgreSQL, both real
// servers, as a deployment of several gateways sharing one lake would.
// Two tables, one deleting with position delete files and one rewriting
// its files, are given appends, deletes and an update; the gateway must
// serve each as the fidelity harness's independent iceberg-go reads of
// the table say, and record for record as a gateway serves the same
// history written to twin tables on local disk.
func TestServesALakeOnS3WithCatalogOnPostgres(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	props := s3LakeServers(t)
	s3Cat, err := lake.OpenCatalog(ctx, t.TempDir(), props)
	if err != nil {
		t.Fatal(err)
	}
	localDir := t.TempDir()
	localCat, err := lake.OpenCatalog(ctx, localDir, nil)
	if err != nil {
		t.Fatal(err)
	}

	steps := s3LakeHistory(t)
	type twin struct {
		mode, topic        string
		s3Snaps, diskSnaps []int64
	}
	var twins []twin
	for _, mode := range []string{"merge-on-read", "copy-on-write"} {
		name := strings.ReplaceAll(mode, "-", "_")
		tbl, s3Snaps := s3LakeWrite(t, s3Cat, "lake", name, mode, steps)
		if !strings.HasPrefix(tbl.Location(), "s3://lake/warehouse/") {
			t.Fatalf("table %s lies at %s, not in the bucket", name, tbl.Location())
		}
		_, diskSnaps := s3LakeWrite(t, localCat, "lake", name, mode, steps)
		twins = append(twins, twin{mode: mode, topic: "lake." + name, s3Snaps: s3Snaps, diskSnaps: diskSnaps})
	}

	// What a user passes to lakegw serve: the catalog properties, the
	// S3 FileIO's among them.
	var args []string
	for k, v := range props {
		args = append(args, "--catalog-prop", k+"="+v)
	}
	g := startGateway(t, t.TempDir(), "", args...)
	local := startGateway(t, localDir, "")

	for _, tw := range twins {
		t.Run(tw.topic, func(t *testing.T) {
			var expect []fidExpect
			for i, s := range steps {
				if s.uncountedOnMoR && tw.mode == "merge-on-read" {
					continue
				}
				expect = append(expect, fidExpect{Snapshots: []int64{tw.s3Snaps[i]}, Counts: s.counts})
			}
			fidCheck(t, g, fidelityTable{name: tw.topic, topic: tw.topic, expect: expect, open: func(t *testing.T) *table.Table {
				id, err := lake.ParseIdent(tw.topic)
				if err != nil {
					t.Fatal(err)
				}
				tbl, err := s3Cat.LoadTable(context.Background(), id)
				if err != nil {
					t.Fatal(err)
				}
				return tbl
			}})

			if msg := fidWaitIndexed(t, local, tw.topic, tw.diskSnaps[len(tw.diskSnaps)-1]); msg != "" {
				t.Fatalf("the gateway on local disk cannot index %s: %s", tw.topic, msg)
			}
			fromS3, _ := fidConsume(t, g.addr, tw.topic)
			fromDisk, _ := fidConsume(t, local.addr, tw.topic)
			if len(fromS3) != 1 || len(fromDisk) != 1 || len(fromS3[0]) != len(fromDisk[0]) {
				t.Fatalf("records by partition: %v from S3, %v from local disk", s3LakeCounts(fromS3), s3LakeCounts(fromDisk))
			}
			// Within a snapshot records come in the order of file paths,
			// which are random names, different in the twins: compare
			// each snapshot's records as a set, its offsets as a range.
			a, b := s3LakeBySnapshot(t, fromS3[0]), s3LakeBySnapshot(t, fromDisk[0])
			if len(a) != len(b) {
				t.Fatalf("records of %d snapshots from S3, of %d from local disk", len(a), len(b))
			}
			for i := range a {
				if !slices.Equal(a[i], b[i]) {
					t.Fatalf("snapshot #%d differs:\n  from S3:   %s\n  from disk: %s", i+1, s3LakeHead(a[i]), s3LakeHead(b[i]))
				}
			}
			t.Logf("%s: %d records, the same from S3 as from local disk", tw.topic, len(fromS3[0]))
		})
	}
	if strings.Contains(g.Logs(), `"level":"error"`) {
		t.Errorf("the gateway on S3 logged errors:\n%s", fidTail(g.Logs(), 40))
	}
}

func s3LakeCounts(parts map[int32][]*kgo.Record) map[int32]int {
	out := map[int32]int{}
	for p, recs := range parts {
		out[p] = len(recs)
	}
	return out
}

// s3LakeServers starts an S3 server with bucket "lake" and a PostgreSQL
// database, and returns the catalog properties of a lake in them.
func s3LakeServers(t *testing.T) iceberg.Properties {
	t.Helper()
	s3 := s3test.Start(t)
	s3.CreateBucket(t, "lake")
	props := iceberg.Properties(s3.LakeProps(pgtest.Start(t).NewDatabase(t), "s3://lake/warehouse"))
	return props
}

// TestLsmTableOnS3 drives lakegw's own writers on a lake in S3 with its
// catalog in PostgreSQL: a primary-key table is created, loaded (with a
// delete), compacted and maintained by the CLI, which writes its runs,
// position deletes or deletion vectors, changelog files and changelog
// manifests through the S3 FileIO and lists the table's objects; point
// lookups read them back, and the gateway serves the changelog.
func TestLsmTableOnS3(t *testing.T) {
	t.Parallel()
	props := s3LakeServers(t)
	var catArgs []string
	for k, v := range props {
		catArgs = append(catArgs, "--catalog-prop", k+"="+v)
	}
	dir := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(lakegwBin, append(append(args, "--data-dir", dir, "--log-level", "warn"), catArgs...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("lakegw %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	jsonl := filepath.Join(dir, "a.jsonl")
	if err := os.WriteFile(jsonl, []byte(`{"id":1,"name":"apple","qty":2}
{"id":2,"name":"pear","qty":3}
{"id":1,"qty":5}
{"id":3,"name":"fig","qty":1}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	csv := filepath.Join(dir, "b.csv")
	if err := os.WriteFile(csv, []byte("id,name,qty,_op\n2,,4,\n3,,,delete\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"1": "1|apple|7|null", "2": "2|pear|7|null"}
	var topics []string
	for _, v := range []string{"2", "3"} {
		name := "shop.stock_v" + v
		topics = append(topics, name)
		run("table", "create", name, "--schema", "id long, name string, qty long", "--primary-key", "id",
			"--buckets", "2", "--merge-engine", "aggregation", "--agg", "qty=sum", "--format-version", v)
		run("load", name, jsonl)
		run("load", name, csv)
		if got := strings.TrimSpace(run("get", name, "1")); got != `{"id":1,"name":"apple","qty":7}` {
			t.Fatalf("%s: get 1: %s", name, got)
		}
		if out := run("compact", name); !strings.Contains(out, "compacted") {
			t.Fatalf("%s: compact: %s", name, out)
		}
		if got := strings.TrimSpace(run("get", name, "2")); got != `{"id":2,"name":"pear","qty":7}` {
			t.Fatalf("%s: get 2 after compaction: %s", name, got)
		}
		// A maintenance pass lists the table's objects for orphans and
		// reads every manifest through the S3 FileIO.
		if out := run("maintain", name); !strings.Contains(out, "orphans:") {
			t.Fatalf("%s: maintain: %s", name, out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "warehouse")); err == nil {
		t.Fatalf("the CLI wrote a local warehouse under %s: the lake is in S3", dir)
	}

	g := startGateway(t, t.TempDir(), "", catArgs...)
	for _, topic := range topics {
		rp := newLsmReplayer(t, g.addr, topic, 2)
		// 3 inserts, then +U of 2 and -D of 3: 5 events (the compaction none).
		rp.consumeTo(5, g)
		if d := diffRows(rp.state, want); d != "" {
			t.Fatalf("%s replay:\n%s", topic, d)
		}
	}
}
