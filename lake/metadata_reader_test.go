package lake

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// metadataChain returns the metadata files of a table with a history of
// n appends, a schema change, a property change and an expiry, oldest first.
func metadataChain(tb testing.TB, n int) [][]byte {
	tb.Helper()
	ctx := context.Background()
	dir := tb.TempDir()
	cat, ident := pointerTable(tb, dir, n)
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		tb.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.SetProperties(iceberg.Properties{"k": "v"}); err != nil {
		tb.Fatal(err)
	}
	if err := tx.UpdateSchema(true, false).AddColumn([]string{"note"}, iceberg.PrimitiveTypes.String, "", false, nil).Commit(); err != nil {
		tb.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		tb.Fatal(err)
	}
	tbl, err = cat.LoadTable(ctx, ident)
	if err != nil {
		tb.Fatal(err)
	}
	tx = tbl.NewTransaction()
	if err := tx.ExpireSnapshots(table.WithRetainLast(4), table.WithOlderThan(0)); err != nil {
		tb.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		tb.Fatal(err)
	}
	var docs [][]byte
	files, err := filepath.Glob(filepath.Join(dir, "warehouse", "ns.db", "t", "metadata", "*.metadata.json"))
	if err != nil {
		tb.Fatal(err)
	}
	sort.Strings(files) // versions are zero-padded: name order is commit order
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			tb.Fatal(err)
		}
		docs = append(docs, b)
	}
	if len(docs) < n+2 {
		tb.Fatalf("%d metadata files, want at least %d", len(docs), n+2)
	}
	return docs
}

// fixtureChains returns the metadata files of each fixture table, oldest
// first.
func fixtureChains(tb testing.TB) [][][]byte {
	tb.Helper()
	var root string
	for _, dir := range []string{"../../shared/fixtures/iceberg", "/work/shared/fixtures/iceberg"} {
		if _, err := os.Stat(dir); err == nil {
			root = dir
			break
		}
	}
	if root == "" {
		tb.Fatal("shared/fixtures/iceberg not found beside the repository")
	}
	byDir := map[string][]string{}
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".metadata.json") {
			byDir[filepath.Dir(p)] = append(byDir[filepath.Dir(p)], p)
		}
		return err
	})
	if err != nil || len(byDir) == 0 {
		tb.Fatalf("fixture metadata files: %v (%d tables)", err, len(byDir))
	}
	var chains [][][]byte
	for _, dir := range slices.Sorted(maps.Keys(byDir)) {
		files := byDir[dir]
		sort.Strings(files)
		var chain [][]byte
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				tb.Fatal(err)
			}
			chain = append(chain, b)
		}
		chains = append(chains, chain)
	}
	return chains
}

// sameView fails unless got answers every question of table.Metadata as
// want, iceberg-go's own parse of the same file, does.
func sameView(t *testing.T, what string, got, want table.Metadata) {
	t.Helper()
	eq := func(name string, g, w any) {
		t.Helper()
		if !reflect.DeepEqual(g, w) {
			t.Fatalf("%s: %s = %+v, iceberg-go says %+v", what, name, g, w)
		}
	}
	eq("Version", got.Version(), want.Version())
	eq("TableUUID", got.TableUUID(), want.TableUUID())
	eq("Location", got.Location(), want.Location())
	eq("LastUpdatedMillis", got.LastUpdatedMillis(), want.LastUpdatedMillis())
	eq("LastColumnID", got.LastColumnID(), want.LastColumnID())
	if len(got.Schemas()) != len(want.Schemas()) || !got.CurrentSchema().Equals(want.CurrentSchema()) {
		t.Fatalf("%s: schemas differ", what)
	}
	eq("PartitionSpecs", got.PartitionSpecs(), want.PartitionSpecs())
	eq("DefaultPartitionSpec", got.DefaultPartitionSpec(), want.DefaultPartitionSpec())
	eq("LastPartitionSpecID", got.LastPartitionSpecID(), want.LastPartitionSpecID())
	eq("Snapshots", got.Snapshots(), want.Snapshots())
	eq("CurrentSnapshot", got.CurrentSnapshot(), want.CurrentSnapshot())
	eq("Ref", got.Ref(), want.Ref())
	eq("Refs", maps.Collect(got.Refs()), maps.Collect(want.Refs()))
	for name := range want.Refs() {
		eq("SnapshotByName("+name+")", got.SnapshotByName(name), want.SnapshotByName(name))
	}
	eq("SnapshotByName(missing)", got.SnapshotByName("no-such-ref"), want.SnapshotByName("no-such-ref"))
	for _, s := range want.Snapshots() {
		eq("SnapshotByID", got.SnapshotByID(s.SnapshotID), want.SnapshotByID(s.SnapshotID))
	}
	eq("SnapshotByID(missing)", got.SnapshotByID(-42), want.SnapshotByID(-42))
	eq("SnapshotLogs", slices.Collect(got.SnapshotLogs()), slices.Collect(want.SnapshotLogs()))
	eq("SortOrders", got.SortOrders(), want.SortOrders())
	eq("DefaultSortOrder", got.DefaultSortOrder(), want.DefaultSortOrder())
	eq("Properties", got.Properties(), want.Properties())
	eq("PreviousFiles", slices.Collect(got.PreviousFiles()), slices.Collect(want.PreviousFiles()))
	eq("LastSequenceNumber", got.LastSequenceNumber(), want.LastSequenceNumber())
	eq("NextRowID", got.NextRowID(), want.NextRowID())
	eq("Statistics", slices.Collect(got.Statistics()), slices.Collect(want.Statistics()))
}

// sameWrittenOut fails unless got, written out as JSON (as lakegw's pinned
// log view does), reads back in iceberg-go as want.
func sameWrittenOut(t *testing.T, what string, got, want table.Metadata) {
	t.Helper()
	b, err := json.Marshal(got)
	if err != nil {
		t.Fatalf("%s: marshal: %v", what, err)
	}
	re, err := table.ParseMetadataBytes(b)
	if err != nil {
		t.Fatalf("%s: iceberg-go cannot read it written out: %v", what, err)
	}
	sameView(t, what+" written out", re, want)
}

// A reader following a table's metadata files, forwards, backwards and
// across tables, sees every file exactly as iceberg-go's parser does.
func TestMetadataReaderAgreesWithIcebergGo(t *testing.T) {
	chains := append(fixtureChains(t), metadataChain(t, 12))
	shared := NewMetadataReader()
	for ci, chain := range chains {
		forward, backward := NewMetadataReader(), NewMetadataReader()
		for i := range chain {
			for _, step := range []struct {
				r   *MetadataReader
				doc []byte
			}{{forward, chain[i]}, {backward, chain[len(chain)-1-i]}, {shared, chain[i]}} {
				want, err := table.ParseMetadataBytes(step.doc)
				if err != nil {
					t.Fatalf("chain %d file %d: iceberg-go: %v", ci, i, err)
				}
				got, err := step.r.Parse(step.doc)
				if err != nil {
					t.Fatalf("chain %d file %d: %v", ci, i, err)
				}
				sameView(t, "chain file", got, want)
				sameWrittenOut(t, "chain file", got, want)
				again, err := step.r.Parse(step.doc)
				if err != nil || !got.Equals(again) {
					t.Fatalf("chain %d file %d: a second parse (%v) is not Equal to the first", ci, i, err)
				}
			}
		}
	}
}

// The reader decodes only the snapshots it has not seen: following a
// table, the snapshots of the previous file are the very same values.
func TestMetadataReaderReusesSeenSnapshots(t *testing.T) {
	chain := metadataChain(t, 12)
	r := NewMetadataReader()
	prev, err := r.Parse(chain[10])
	if err != nil {
		t.Fatal(err)
	}
	next, err := r.Parse(chain[11])
	if err != nil {
		t.Fatal(err)
	}
	ps, ns := prev.(*incrementalMetadata).snapshots, next.(*incrementalMetadata).snapshots
	if len(ns) != len(ps)+1 {
		t.Fatalf("%d snapshots after %d", len(ns), len(ps))
	}
	for i := range ps {
		if ps[i].Summary != ns[i].Summary {
			t.Fatalf("snapshot %d decoded again", ps[i].SnapshotID)
		}
	}
}

// Whatever a file's fault, the reader accepts exactly what iceberg-go
// accepts, having seen the healthy file before (so its snapshots are
// known) or not.
func TestMetadataReaderRejectsWhatIcebergGoRejects(t *testing.T) {
	chain := metadataChain(t, 12)
	healthy := chain[12]
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(healthy, &doc); err != nil {
		t.Fatal(err)
	}
	var snaps []map[string]json.RawMessage
	if err := json.Unmarshal(doc["snapshots"], &snaps); err != nil || len(snaps) < 2 {
		t.Fatalf("snapshots: %v (%d)", err, len(snaps))
	}
	first := string(snaps[0]["snapshot-id"])
	current := string(doc["current-snapshot-id"])
	with := func(key, value string) []byte {
		m := maps.Clone(doc)
		if value == "" {
			delete(m, key)
		} else {
			m[key] = json.RawMessage(value)
		}
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	snapsWith := func(edit func([]map[string]json.RawMessage) []map[string]json.RawMessage) []byte {
		cp := make([]map[string]json.RawMessage, len(snaps))
		for i := range snaps {
			cp[i] = maps.Clone(snaps[i])
		}
		b, err := json.Marshal(edit(cp))
		if err != nil {
			t.Fatal(err)
		}
		return with("snapshots", string(b))
	}
	cases := map[string][]byte{
		"healthy":            healthy,
		"duplicate snapshot": snapsWith(func(s []map[string]json.RawMessage) []map[string]json.RawMessage { return append(s, s[0]) }),
		"snapshot id a string": snapsWith(func(s []map[string]json.RawMessage) []map[string]json.RawMessage {
			s[1]["snapshot-id"] = []byte(`"x"`)
			return s
		}),
		"snapshot without time": snapsWith(func(s []map[string]json.RawMessage) []map[string]json.RawMessage {
			delete(s[1], "timestamp-ms")
			return s
		}),
		"snapshot null":          snapsWith(func(s []map[string]json.RawMessage) []map[string]json.RawMessage { return append(s, nil) }),
		"no refs":                with("refs", ""),
		"refs null":              with("refs", "null"),
		"refs a list":            with("refs", "[]"),
		"tag":                    with("refs", `{"main":{"snapshot-id":`+current+`,"type":"branch"},"t":{"snapshot-id":`+first+`,"type":"tag","max-ref-age-ms":5}}`),
		"ref to nothing":         with("refs", `{"main":{"snapshot-id":`+current+`,"type":"branch"},"t":{"snapshot-id":7,"type":"tag"}}`),
		"main is not current":    with("refs", `{"main":{"snapshot-id":`+first+`,"type":"branch"}}`),
		"current -1":             with("current-snapshot-id", "-1"),
		"current a string":       with("current-snapshot-id", `"1"`),
		"current unknown":        with("current-snapshot-id", "7"),
		"no current":             with("current-snapshot-id", ""),
		"no snapshots":           with("snapshots", ""),
		"upper-case key":         bytes.Replace(healthy, []byte(`"snapshots"`), []byte(`"Snapshots"`), 1),
		"key twice":              bytes.Replace(healthy, []byte(`"snapshots"`), []byte(`"snapshots":[],"snapshots"`), 1),
		"truncated":              healthy[:len(healthy)*2/3],
		"trailing garbage":       append(slices.Clone(healthy), " x"...),
		"unbalanced in snapshot": bytes.Replace(healthy, []byte(`"summary"`), []byte(`"summary":{"a":[}],"b"`), 1),
		"not an object":          []byte(`[1]`),
		"empty":                  nil,
	}
	cases["snapshots null"] = with("snapshots", "null")
	var log []map[string]json.RawMessage
	if err := json.Unmarshal(doc["snapshot-log"], &log); err != nil || len(log) < 3 {
		t.Fatalf("snapshot-log: %v (%d)", err, len(log))
	}
	logWith := func(i int, key, value string) []byte {
		cp := make([]map[string]json.RawMessage, len(log))
		for j := range log {
			cp[j] = maps.Clone(log[j])
		}
		cp[i][key] = json.RawMessage(value)
		b, err := json.Marshal(cp)
		if err != nil {
			t.Fatal(err)
		}
		return with("snapshot-log", string(b))
	}
	var lastUpdated int64
	if err := json.Unmarshal(doc["last-updated-ms"], &lastUpdated); err != nil {
		t.Fatal(err)
	}
	cases["log out of order"] = logWith(1, "timestamp-ms", "0")
	cases["log a little out of order"] = logWith(2, "timestamp-ms", fmt.Sprint(lastUpdated-90_000))
	cases["log after the last update"] = logWith(len(log)-1, "timestamp-ms", fmt.Sprint(lastUpdated+120_000))
	cases["log entry id a string"] = logWith(1, "snapshot-id", `"x"`)
	cases["log null"] = with("snapshot-log", "null")
	cases["no log"] = with("snapshot-log", "")
	cases["log an object"] = with("snapshot-log", "{}")
	m := maps.Clone(doc)
	delete(m, "refs")
	m["current-snapshot-id"] = json.RawMessage("null")
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	cases["current null, no refs"] = b

	for name, c := range cases {
		want, wantErr := table.ParseMetadataBytes(c)
		for _, warm := range []bool{false, true} {
			r := NewMetadataReader()
			if warm {
				if _, err := r.Parse(healthy); err != nil {
					t.Fatal(err)
				}
			}
			got, err := r.Parse(c)
			if (err == nil) != (wantErr == nil) {
				t.Fatalf("%s (warm %v): reader error %v, iceberg-go error %v", name, warm, err, wantErr)
			}
			if err == nil {
				sameView(t, name, got, want)
				sameWrittenOut(t, name, got, want)
			}
		}
	}
}

// BenchmarkMetadataReader parses the newest of a table's metadata files
// after the one before it, against iceberg-go parsing it whole.
func BenchmarkMetadataReader(b *testing.B) {
	chain := metadataChain(b, 300)
	// Two files before the expiry: an op parses both, the second adding
	// one snapshot to the first's 299.
	prev, last := chain[len(chain)-4], chain[len(chain)-3]
	b.Run("iceberg-go", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			for _, doc := range [][]byte{prev, last} {
				if _, err := table.ParseMetadataBytes(doc); err != nil {
					b.Fatal(err)
				}
			}
		}
	})
	b.Run("reader", func(b *testing.B) {
		b.ReportAllocs()
		r := NewMetadataReader()
		for b.Loop() {
			if _, err := r.Parse(prev); err != nil {
				b.Fatal(err)
			}
			if _, err := r.Parse(last); err != nil {
				b.Fatal(err)
			}
		}
	})
}
