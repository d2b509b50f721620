package e2e

// The fidelity harness: for a table served as a topic, consume the topic
// from its log start through the Kafka protocol, group the records by
// snapshot (header lakegw.snapshot-id), and for every snapshot S of the
// table's main history apply every event up to S to a multiset of rows and
// compare it with an independent iceberg-go read of S, row for row.
// Deletes and updates must find their before-image in the multiset. Rows
// are compared in a canonical form built from the Iceberg types on both
// sides (fidelity_values_test.go), never through lakegw's encoder.
//
// Besides the replay, the harness checks:
//   - every record's headers (op, snapshot id, sequence number) against
//     its value and the table metadata;
//   - replace (compaction) snapshots yield no records;
//   - snapshots that add no delete files (appends, copy-on-write
//     overwrites and deletes) yield exactly the rows that changed: deletes
//     (and update before-images) are the rows of S-1 not in S, inserts (and
//     update after-images) the rows of S not in S-1, as multisets;
//     carry-over rows never show;
//   - on tables with identifier fields, a key deleted and inserted in one
//     snapshot is one update fidEvent, never a delete plus an insert;
//   - exact event counts where the writer of the table knows them.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/lakegw/lakegw/lake"
)

const fidelityFixtures = "/work/shared/fixtures/iceberg"

// fidFixturesRoot is shared/fixtures/iceberg: beside the repository in CI (a
// fresh clone with shared/ next to it), or the workplace's shared folder.
func fidFixturesRoot(t *testing.T) string {
	t.Helper()
	for _, dir := range []string{"../../shared/fixtures/iceberg", fidelityFixtures} {
		if st, err := os.Stat(dir); err == nil && st.IsDir() {
			abs, err := filepath.Abs(dir)
			if err != nil {
				t.Fatal(err)
			}
			return abs
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("shared/fixtures/iceberg not found beside the repository")
	}
	t.Skip("shared/fixtures/iceberg not found")
	return ""
}

// fidExpect is an exact count of events, by debezium op, summed over a
// group of snapshots.
type fidExpect struct {
	Snapshots []int64        `json:"snapshots"`
	Counts    map[string]int `json:"counts"`
}

// fidelityTable is a table the harness checks.
type fidelityTable struct {
	name  string // subtest name
	topic string
	// open loads the table for the oracle, independently of the gateway.
	open   func(t *testing.T) *table.Table
	expect []fidExpect
}

// fidRegister registers a table by metadata file with the CLI.
func fidRegister(t *testing.T, dataDir, ident, metadata string, remaps ...string) {
	t.Helper()
	args := []string{"table", "register", ident, metadata, "--data-dir", dataDir}
	for _, r := range remaps {
		args = append(args, "--remap-location", r)
	}
	out, err := exec.Command(lakegwBin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("lakegw %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// fidLatestMetadata returns the highest vN.metadata.json of a table folder.
func fidLatestMetadata(t *testing.T, dir string) string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(dir, "metadata"))
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`^v(\d+)\.metadata\.json$`)
	best, bestName := -1, ""
	for _, e := range entries {
		if m := re.FindStringSubmatch(e.Name()); m != nil {
			if n, _ := strconv.Atoi(m[1]); n > best {
				best, bestName = n, e.Name()
			}
		}
	}
	if best < 0 {
		t.Fatalf("no vN.metadata.json in %s/metadata", dir)
	}
	return filepath.Join(dir, "metadata", bestName)
}

// fidFixture is one table of shared/fixtures/iceberg.
type fidFixture struct {
	name     string
	dir      string // below the fixtures root
	original string // the location prefix its metadata records
	expect   map[int64]map[string]int
}

var fidelityFixtureTables = []fidFixture{
	{
		// Spark merge-on-read UPDATEs (position deletes), a copy-on-write
		// DELETE, a delete snapshot that changes nothing. No identifier
		// fields: an UPDATE is deletes plus inserts. Counts from the README,
		// but for seq 4: Spark's UPDATE of every row rewrote 3077 rows
		// unchanged (NOT NULL is NULL), and whether such a position delete
		// plus identical insert is an event pair or nothing is lakegw's
		// choice (it folds them away, as copy-on-write carry-over).
		name: "duckdb_spec2_mor", dir: "duckdb_spec2_mor/pyspark_iceberg_table",
		original: "data/iceberg/generated_spec2_0_001/pyspark_iceberg_table",
		expect: map[int64]map[string]int{
			1: {"c": 6005}, 2: {"c": 3077, "d": 3077}, 3: {"c": 1685},
			5: {"d": 7690 - 6592}, 6: {}, 7: {"c": 685, "d": 685},
		},
	},
	{
		// Copy-on-write rewrites of whole files: only changed rows are
		// events (checked exactly against the snapshots' contents).
		name: "duckdb_spec1_cow", dir: "duckdb_spec1_cow/pyspark_iceberg_table",
		original: "data/iceberg/generated_spec1_0_001/pyspark_iceberg_table",
		expect:   map[int64]map[string]int{1: {"c": 6005}, 3: {"c": 1685}, 5: {}},
	},
	{
		name: "duckdb_equality_deletes_partitioned", dir: "duckdb_equality_deletes/warehouse/mydb/mytable_partitioned",
		original: "data/persistent/equality_deletes/warehouse/mydb/mytable_partitioned",
	},
	{
		name: "dremio_multi_rowgroup_pos_deletes", dir: "dremio_multi_rowgroup_pos_deletes",
		original: "/tmp/iceberg-test-tables/v2/multi_rowgroup_orders_with_deletes",
		expect:   map[int64]map[string]int{1: {"c": 9000}, 2: {"d": 900}, 3: {"d": 30}},
	},
}

const (
	damagedDir      = "duckdb_equality_deletes/warehouse/mydb/mytable"
	damagedOriginal = "data/persistent/equality_deletes/warehouse/mydb/mytable"
	damagedMissing  = "snap-7342794868382145167-1-34f7dec7-90c5-4cd5-b158-5782b73fc010.avro"
)

// TestFidelityFixtures checks every table of shared/fixtures/iceberg,
// registered in place with their recorded locations remapped, served by
// one gateway; the damaged table must not disturb the others.
func TestFidelityFixtures(t *testing.T) {
	t.Parallel()
	root := fidFixturesRoot(t)
	dir := t.TempDir()
	var tables []fidelityTable
	for _, f := range fidelityFixtureTables {
		tdir := filepath.Join(root, f.dir)
		meta := fidLatestMetadata(t, tdir)
		ident := "fixtures." + f.name
		fidRegister(t, dir, ident, meta, f.original+"="+tdir)
		ft := fidelityTable{name: f.name, topic: ident, open: fidOpenAt(ident, meta, f.original, tdir)}
		if len(f.expect) > 0 {
			tbl := ft.open(t)
			for _, s := range fidWalkMain(tbl.Metadata()) {
				if c, ok := f.expect[s.seq]; ok {
					ft.expect = append(ft.expect, fidExpect{Snapshots: []int64{s.id}, Counts: c})
				}
			}
		}
		tables = append(tables, ft)
	}
	dmgDir := filepath.Join(root, damagedDir)
	dmgMeta := fidLatestMetadata(t, dmgDir)
	fidRegister(t, dir, "fixtures.duckdb_equality_deletes_damaged", dmgMeta, damagedOriginal+"="+dmgDir)

	g := startGateway(t, dir, "")
	for _, ft := range tables {
		t.Run(ft.name, func(t *testing.T) { fidCheck(t, g, ft) })
	}
	t.Run("duckdb_equality_deletes_damaged", func(t *testing.T) {
		fidCheckDamaged(t, g, "fixtures.duckdb_equality_deletes_damaged",
			fidOpenAt("fixtures.duckdb_equality_deletes_damaged", dmgMeta, damagedOriginal, dmgDir), damagedMissing)
	})
}

func fidOpenAt(ident, meta, from, to string) func(t *testing.T) *table.Table {
	return func(t *testing.T) *table.Table {
		t.Helper()
		id, err := lake.ParseIdent(ident)
		if err != nil {
			t.Fatal(err)
		}
		var remaps []lake.Remap
		if from != "" {
			remaps = []lake.Remap{{From: from, To: to}}
		}
		tbl, err := lake.OpenTableAt(context.Background(), id, meta, nil, remaps)
		if err != nil {
			t.Fatal(err)
		}
		return tbl
	}
}

func fidOpenCatalog(dataDir, ident string) func(t *testing.T) *table.Table {
	return func(t *testing.T) *table.Table {
		t.Helper()
		ctx := context.Background()
		cat, err := lake.OpenCatalog(ctx, dataDir, nil)
		if err != nil {
			t.Fatal(err)
		}
		id, err := lake.ParseIdent(ident)
		if err != nil {
			t.Fatal(err)
		}
		tbl, err := cat.LoadTable(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return tbl
	}
}

// fidSnap is a snapshot of the main branch as the harness sees it.
type fidSnap struct {
	id     int64
	seq    int64 // sequence number; for v1 tables the position in history from 1
	op     string
	schema *iceberg.Schema
	snap   *table.Snapshot
}

// fidWalkMain returns the main branch's snapshots, oldest first, walking
// parents from the branch head until a parent is missing (expired).
func fidWalkMain(meta table.Metadata) []fidSnap {
	head := meta.CurrentSnapshot()
	for name, ref := range meta.Refs() {
		if name == table.MainBranch {
			head = meta.SnapshotByID(ref.SnapshotID)
		}
	}
	var out []fidSnap
	for s := head; s != nil; {
		// Every snapshot is served, and read by the oracle, in the
		// table's current schema (lakegw.schema-mode=current).
		ms := fidSnap{id: s.SnapshotID, seq: s.SequenceNumber, snap: s, schema: meta.CurrentSchema()}
		if s.Summary != nil {
			ms.op = string(s.Summary.Operation)
		}
		out = append(out, ms)
		if s.ParentSnapshotID == nil {
			break
		}
		s = meta.SnapshotByID(*s.ParentSnapshotID)
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	if meta.Version() == 1 {
		for i := range out {
			out[i].seq = int64(i + 1)
		}
	}
	return out
}

// fidAddsDeletes reports whether a snapshot's summary says it added
// delete files; ok is false when the summary does not say.
func fidAddsDeletes(s *table.Snapshot) (adds, ok bool) {
	if s.Summary == nil || s.Summary.Properties == nil {
		return false, false
	}
	p := s.Summary.Properties
	if _, has := p["added-data-files"]; !has {
		if _, has := p["total-records"]; !has {
			return false, false
		}
	}
	for _, k := range []string{"added-delete-files", "added-position-delete-files", "added-equality-delete-files", "added-dvs",
		"added-position-deletes", "added-equality-deletes"} {
		if n, _ := strconv.Atoi(p[k]); n > 0 {
			return true, true
		}
	}
	return false, true
}

// fidWaitIndexed waits until the gateway has indexed the last snapshot of a
// topic (its debug log says so) or reports that it cannot index it.
func fidWaitIndexed(t *testing.T, g *gateway, topic string, last int64) (indexErr string) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(60 * time.Second)
	var lastEnd int64 = -1
	stableSince := time.Now()
	for {
		logs := g.Logs()
		if time.Since(start) > 10*time.Second && !strings.Contains(logs, `"indexed snapshot"`) {
			// The gateway no longer logs "indexed snapshot" at debug level:
			// fall back to waiting for the end offsets to settle.
			end := int64(0)
			if offs, err := kadm.NewClient(mustClient(t, g.addr)).ListEndOffsets(context.Background(), topic); err == nil {
				offs.Each(func(o kadm.ListedOffset) { end += o.Offset })
			}
			if end != lastEnd {
				lastEnd, stableSince = end, time.Now()
			} else if time.Since(stableSince) > 3*time.Second {
				t.Logf("%s: no \"indexed snapshot\" log lines; end offsets settled at %d", topic, end)
				return ""
			}
		}
		for _, line := range strings.Split(logs, "\n") {
			if !strings.Contains(line, `"`+topic+`"`) {
				continue
			}
			var l struct {
				Topic    string `json:"topic"`
				Message  string `json:"message"`
				Snapshot int64  `json:"snapshot_id"`
				Error    string `json:"error"`
			}
			if json.Unmarshal([]byte(line), &l) != nil || l.Topic != topic {
				continue
			}
			if l.Message == "indexed snapshot" && l.Snapshot == last {
				return ""
			}
			if l.Error != "" && strings.Contains(l.Message, "cannot index") {
				return l.Error
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the gateway did not index snapshot %d of %s within 60s; logs:\n%s", last, topic, fidTail(g.Logs(), 40))
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func fidTail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// fidConsume reads every partition of a topic from its log start to its
// end offset through the Kafka protocol.
func fidConsume(t *testing.T, addr, topic string) (map[int32][]*kgo.Record, map[int32][2]int64) {
	t.Helper()
	ctx := context.Background()
	adm := kadm.NewClient(mustClient(t, addr))
	starts, err := adm.ListStartOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	bounds := map[int32][2]int64{}
	assign := map[int32]kgo.Offset{}
	want := 0
	ends.Each(func(o kadm.ListedOffset) {
		if o.Topic != topic {
			return
		}
		if o.Err != nil {
			t.Fatalf("end offset of %s/%d: %v", topic, o.Partition, o.Err)
		}
		s, ok := starts.Lookup(topic, o.Partition)
		if !ok || s.Err != nil {
			t.Fatalf("start offset of %s/%d: %+v", topic, o.Partition, s)
		}
		bounds[o.Partition] = [2]int64{s.Offset, o.Offset}
		assign[o.Partition] = kgo.NewOffset().At(s.Offset)
		want += int(o.Offset - s.Offset)
	})
	if len(bounds) == 0 {
		t.Fatalf("topic %s has no partitions", topic)
	}
	out := map[int32][]*kgo.Record{}
	if want == 0 {
		return out, bounds
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: assign}),
		kgo.FetchMaxBytes(8<<20))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	cctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	got := 0
	for got < want {
		fs := cl.PollFetches(cctx)
		if cctx.Err() != nil {
			t.Fatalf("%s: got %d of %d records before the timeout", topic, got, want)
		}
		for _, e := range fs.Errors() {
			t.Fatalf("fetch error on %s/%d: %v", e.Topic, e.Partition, e.Err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			if r.Offset < bounds[r.Partition][1] {
				out[r.Partition] = append(out[r.Partition], r)
				got++
			}
		})
	}
	for p, recs := range out {
		for i, r := range recs {
			if r.Offset != bounds[p][0]+int64(i) {
				t.Fatalf("%s/%d: record %d has offset %d, want dense offsets from %d", topic, p, i, r.Offset, bounds[p][0])
			}
		}
	}
	return out, bounds
}

// fidEvent is one decoded change record.
type fidEvent struct {
	partition int32
	offset    int64
	op        string
	before    map[string]any
	after     map[string]any
	raw       []byte
}

type fidelitySummary struct {
	snapshots int
	ops       map[string]int
	failures  int
}

// fidCheck runs the harness on one table.
func fidCheck(t *testing.T, g *gateway, ft fidelityTable) {
	tbl := ft.open(t)
	meta := tbl.Metadata()
	hist := fidWalkMain(meta)
	if len(hist) == 0 {
		t.Fatalf("%s has no snapshots", ft.topic)
	}
	if msg := fidWaitIndexed(t, g, ft.topic, hist[len(hist)-1].id); msg != "" {
		t.Errorf("the gateway cannot index %s: %s", ft.topic, msg)
	}
	parts, bounds := fidConsume(t, g.addr, ft.topic)
	pos := map[int64]int{}
	for i, s := range hist {
		pos[s.id] = i
	}

	// Group by snapshot: per partition, offsets are in snapshot order.
	// Records of snapshots no longer in the history (expired after the
	// gateway indexed them) may only come first.
	bySnap := map[int64][]fidEvent{}
	var prehistory []fidEvent
	pids := make([]int32, 0, len(parts))
	for p := range parts {
		pids = append(pids, p)
	}
	sort.Slice(pids, func(i, j int) bool { return pids[i] < pids[j] })
	for _, p := range pids {
		lastPos := -1
		for _, r := range parts[p] {
			ev, sid, seq := fidDecode(t, ft.topic, r)
			i, known := pos[sid]
			if !known {
				if lastPos >= 0 {
					t.Fatalf("%s/%d offset %d: snapshot %d is not in the main history, after records of snapshot %d", ft.topic, p, r.Offset, sid, hist[lastPos].id)
				}
				prehistory = append(prehistory, ev)
				continue
			}
			if i < lastPos {
				t.Fatalf("%s/%d offset %d: snapshot %d comes after records of the later snapshot %d", ft.topic, p, r.Offset, sid, hist[lastPos].id)
			}
			lastPos = i
			if seq != hist[i].seq {
				t.Errorf("%s/%d offset %d: header lakegw.sequence-number %d, snapshot %d has %d", ft.topic, p, r.Offset, seq, sid, hist[i].seq)
			}
			bySnap[sid] = append(bySnap[sid], ev)
		}
	}

	sum := fidelitySummary{ops: map[string]int{}}
	var (
		rs      *fidSchema
		state   = map[string]int{}
		rows    = map[string]fidRow{}
		prevOra map[string]int
	)
	perSnap := map[int64]map[string]int{}
	failed := func(format string, args ...any) {
		t.Helper()
		sum.failures++
		t.Errorf(format, args...)
	}
	for i, s := range hist {
		label := fmt.Sprintf("%s snapshot %d (seq %d, %s, #%d of %d)", ft.topic, s.id, s.seq, s.op, i+1, len(hist))
		// Records speak the table's current schema, whichever schema
		// their snapshot was written with: so does the oracle.
		nrs := newFidSchema(s.schema)
		rs = nrs
		events := bySnap[s.id]
		if i == 0 {
			events = append(prehistory, events...)
		}
		ops := map[string]int{}
		var deletedKeys, insertedKeys = map[string]int{}, map[string]int{}
		for _, ev := range events {
			ops[ev.op]++
			sum.ops[ev.op]++
			var before, after fidRow
			var err error
			if ev.before != nil {
				if before, err = rs.jsonRow(ev.before); err != nil {
					failed("%s partition %d offset %d: before-image: %v: %s", label, ev.partition, ev.offset, err, ev.raw)
					continue
				}
			}
			if ev.after != nil {
				if after, err = rs.jsonRow(ev.after); err != nil {
					failed("%s partition %d offset %d: after-image: %v: %s", label, ev.partition, ev.offset, err, ev.raw)
					continue
				}
			}
			switch ev.op {
			case "c", "r":
				if before != nil || after == nil {
					failed("%s partition %d offset %d: op %s wants only an after-image: %s", label, ev.partition, ev.offset, ev.op, ev.raw)
					continue
				}
			case "d":
				if before == nil || after != nil {
					failed("%s partition %d offset %d: op d wants only a before-image: %s", label, ev.partition, ev.offset, ev.raw)
					continue
				}
			case "u":
				if before == nil || after == nil {
					failed("%s partition %d offset %d: op u wants both images: %s", label, ev.partition, ev.offset, ev.raw)
					continue
				}
				if len(rs.ids) > 0 && rs.identity(before) != rs.identity(after) {
					failed("%s partition %d offset %d: update changes the identifier fields: %s", label, ev.partition, ev.offset, ev.raw)
				}
			default:
				failed("%s partition %d offset %d: op %q: %s", label, ev.partition, ev.offset, ev.op, ev.raw)
				continue
			}
			if before != nil {
				k := before.key()
				if state[k] == 0 {
					if sum.failures < 40 {
						failed("%s partition %d offset %d (%s): the before-image is not a live row of the replay: %s", label, ev.partition, ev.offset, ev.op, rs.render(before))
					} else {
						sum.failures++
					}
				} else {
					state[k]--
					if state[k] == 0 {
						delete(state, k)
					}
				}
				if ev.op == "d" {
					deletedKeys[rs.identity(before)]++
				}
			}
			if after != nil {
				k := after.key()
				state[k]++
				rows[k] = after
				if ev.op == "c" {
					insertedKeys[rs.identity(after)]++
				}
			}
		}
		perSnap[s.id] = ops
		if len(rs.ids) > 0 {
			for k := range deletedKeys {
				if insertedKeys[k] > 0 {
					failed("%s: key %s is deleted and inserted in one snapshot: want one update event (op u)", label, strings.ReplaceAll(k, "\x1f", ","))
					break
				}
			}
		}
		if i == 0 && s.snap.ParentSnapshotID != nil && meta.SnapshotByID(*s.snap.ParentSnapshotID) == nil && ops["r"] != len(events) {
			// DESIGN.md: after expiry the log starts with a compacted
			// prefix of the live rows of the earliest retained snapshot,
			// lakegw.op "r".
			failed("%s: the earliest retained snapshot (its parent %d is expired) yields %v, want only the live rows as op r (a compacted prefix)",
				label, *s.snap.ParentSnapshotID, ops)
		}
		if s.op == "replace" && len(events) > 0 {
			failed("%s: a replace snapshot yields %d records %v, want none", label, len(events), ops)
		}

		// The oracle: an independent iceberg-go read of S.
		oracle, err := fidScan(tbl, s, rs)
		if err != nil {
			t.Fatalf("%s: iceberg-go scan: %v", label, err)
		}
		if diff := fidDiff(rs, oracle, state, 5); diff != "" {
			failed("%s: the replay differs from iceberg-go's read (events %v):\n%s", label, ops, diff)
			// Go on from the true state, so that each later snapshot is
			// judged on its own.
			state = map[string]int{}
			for k, n := range oracle {
				state[k] = n
				rows[k] = strings.Split(k, "\x1f")
			}
		}
		// Snapshots without delete files: exactly the changed rows.
		if adds, known := fidAddsDeletes(s.snap); known && !adds && (i > 0 || s.snap.ParentSnapshotID == nil) {
			gone, added := 0, 0
			for k, n := range prevOra {
				if d := n - oracle[k]; d > 0 {
					gone += d
				}
			}
			for k, n := range oracle {
				if d := n - prevOra[k]; d > 0 {
					added += d
				}
			}
			if ops["d"]+ops["u"] != gone || ops["c"]+ops["r"]+ops["u"] != added {
				failed("%s: events %v, but the snapshot removes %d rows and adds %d (it adds no delete files: every event must be a changed row, carry-over rows none)",
					label, ops, gone, added)
			}
		}
		prevOra = oracle
		sum.snapshots++
		t.Logf("%s: %v", label, ops)
	}

	for _, eg := range ft.expect {
		if len(eg.Snapshots) == 0 {
			continue
		}
		got := map[string]int{}
		for _, sid := range eg.Snapshots {
			if _, ok := pos[sid]; !ok {
				t.Errorf("%s: expected counts name snapshot %d, which is not in the main history", ft.topic, sid)
			}
			for op, n := range perSnap[sid] {
				got[op] += n
			}
		}
		if !fidSameCounts(got, eg.Counts) {
			failed("%s snapshots %v: events %v, want exactly %v", ft.topic, eg.Snapshots, got, eg.Counts)
		}
	}
	t.Logf("SUMMARY %s: %d snapshots checked, events %v, offsets [start, end) by partition %v, %d failures", ft.topic, sum.snapshots, sum.ops, bounds, sum.failures)
}

func fidSameCounts(a, b map[string]int) bool {
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	for k, v := range b {
		if a[k] != v {
			return false
		}
	}
	return true
}

// fidDecode parses a debezium-json record and checks its headers.
func fidDecode(t *testing.T, topic string, r *kgo.Record) (fidEvent, int64, int64) {
	t.Helper()
	sid, err := strconv.ParseInt(header(r, "lakegw.snapshot-id"), 10, 64)
	if err != nil {
		t.Fatalf("%s/%d offset %d: header lakegw.snapshot-id %q", topic, r.Partition, r.Offset, header(r, "lakegw.snapshot-id"))
	}
	seq, err := strconv.ParseInt(header(r, "lakegw.sequence-number"), 10, 64)
	if err != nil {
		t.Fatalf("%s/%d offset %d: header lakegw.sequence-number %q", topic, r.Partition, r.Offset, header(r, "lakegw.sequence-number"))
	}
	dec := json.NewDecoder(bytes.NewReader(r.Value))
	dec.UseNumber()
	var v struct {
		Before map[string]any `json:"before"`
		After  map[string]any `json:"after"`
		Op     string         `json:"op"`
	}
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("%s/%d offset %d: value is not debezium JSON: %v: %s", topic, r.Partition, r.Offset, err, r.Value)
	}
	wantHeader := map[string]string{"c": "+I", "d": "-D", "u": "+U", "r": "r"}[v.Op]
	if h := header(r, "lakegw.op"); h != wantHeader && !(v.Op == "u" && h == "-U") {
		t.Errorf("%s/%d offset %d: header lakegw.op %q for op %q", topic, r.Partition, r.Offset, h, v.Op)
	}
	return fidEvent{partition: r.Partition, offset: r.Offset, op: v.Op, before: v.Before, after: v.After, raw: r.Value}, sid, seq
}

// fidScan reads a snapshot with iceberg-go's scanner (which applies
// position deletes, equality deletes and deletion vectors) in the
// table's current schema into a multiset of canonical rows. A scan of a
// branch reads its snapshot with the table's schema, projecting older
// files by field id (a snapshot id or a tag would use the snapshot's own
// schema), so the snapshot gets a branch of its own.
func fidScan(tbl *table.Table, s fidSnap, rs *fidSchema) (map[string]int, error) {
	ctx := context.Background()
	b, err := table.MetadataBuilderFromBase(tbl.Metadata(), tbl.MetadataLocation())
	if err != nil {
		return nil, err
	}
	if err := b.SetSnapshotRef("lakegw-oracle", s.id, table.BranchRef); err != nil {
		return nil, err
	}
	meta, err := b.Build()
	if err != nil {
		return nil, err
	}
	scan, err := table.New(tbl.Identifier(), meta, tbl.MetadataLocation(), tbl.FS, nil).Scan().UseRef("lakegw-oracle")
	if err != nil {
		return nil, err
	}
	at, err := scan.ToArrowTable(ctx)
	if err != nil {
		return nil, err
	}
	defer at.Release()
	out := map[string]int{}
	tr := array.NewTableReader(at, 4096)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		cols := make([]int, len(rs.fields))
		for i, f := range rs.fields {
			idx := rec.Schema().FieldIndices(f.Name)
			if len(idx) != 1 {
				return nil, fmt.Errorf("column %q not in the scan's schema %s", f.Name, rec.Schema())
			}
			cols[i] = idx[0]
		}
		for r := 0; r < int(rec.NumRows()); r++ {
			vals := make(fidRow, len(rs.fields))
			for i, f := range rs.fields {
				v, err := fidArrowValue(rec.Column(cols[i]), r, f.Type)
				if err != nil {
					return nil, fmt.Errorf("column %q: %w", f.Name, err)
				}
				vals[i] = v
			}
			out[vals.key()]++
		}
	}
	return out, tr.Err()
}

// fidDiff describes how got differs from want, with up to n rows of
// each side; "" when they are equal.
func fidDiff(rs *fidSchema, want, got map[string]int, n int) string {
	var missing, extra []string
	nm, ne := 0, 0
	for k, w := range want {
		if d := w - got[k]; d > 0 {
			nm += d
			if len(missing) < n {
				missing = append(missing, fmt.Sprintf("  %dx %s", d, rs.render(strings.Split(k, "\x1f"))))
			}
		}
	}
	for k, g := range got {
		if d := g - want[k]; d > 0 {
			ne += d
			if len(extra) < n {
				extra = append(extra, fmt.Sprintf("  %dx %s", d, rs.render(strings.Split(k, "\x1f"))))
			}
		}
	}
	if nm == 0 && ne == 0 {
		return ""
	}
	sort.Strings(missing)
	sort.Strings(extra)
	total := func(m map[string]int) int {
		s := 0
		for _, v := range m {
			s += v
		}
		return s
	}
	return fmt.Sprintf("iceberg-go reads %d rows, the replay holds %d\n%d rows missing from the replay, e.g.\n%s\n%d rows in the replay that the table does not have, e.g.\n%s",
		total(want), total(got), nm, strings.Join(missing, "\n"), ne, strings.Join(extra, "\n"))
}

// fidCheckDamaged checks the damaged fixture: the gateway logs an error
// naming the missing file, a consumer gets the records of the snapshots
// before the damage (checked against iceberg-go) and then
// KAFKA_STORAGE_ERROR, never wrong records.
func fidCheckDamaged(t *testing.T, g *gateway, topic string, open func(*testing.T) *table.Table, missing string) {
	tbl := open(t)
	hist := fidWalkMain(tbl.Metadata())
	msg := fidWaitIndexed(t, g, topic, hist[len(hist)-1].id)
	if msg == "" {
		t.Fatalf("the gateway indexed every snapshot of the damaged table %s", topic)
	}
	if !strings.Contains(msg, missing) {
		t.Errorf("the gateway's error does not name the missing manifest list %s: %s", missing, msg)
	}
	t.Logf("gateway log: %s", msg)

	parts, bounds := fidConsume(t, g.addr, topic)
	recs := parts[0]
	// The records must be those of the snapshots before the damage: replay
	// them against iceberg-go at each of those snapshots.
	state := map[string]int{}
	next := 0
	for _, s := range hist {
		rs := newFidSchema(s.schema)
		oracle, err := fidScan(tbl, s, rs)
		if err != nil {
			if next < len(recs) {
				t.Errorf("records of snapshot %s follow snapshot %d, which iceberg-go cannot read either (%v)", header(recs[next], "lakegw.snapshot-id"), s.id, err)
			}
			t.Logf("snapshot %d is unreadable (%v); %d records served before it", s.id, err, len(recs))
			break
		}
		for ; next < len(recs); next++ {
			ev, sid, _ := fidDecode(t, topic, recs[next])
			if sid != s.id {
				break
			}
			if ev.before != nil {
				r, err := rs.jsonRow(ev.before)
				if err != nil || state[r.key()] == 0 {
					t.Fatalf("offset %d: before-image not live (%v): %s", ev.offset, err, ev.raw)
				}
				state[r.key()]--
				if state[r.key()] == 0 {
					delete(state, r.key())
				}
			}
			if ev.after != nil {
				r, err := rs.jsonRow(ev.after)
				if err != nil {
					t.Fatalf("offset %d: %v", ev.offset, err)
				}
				state[r.key()]++
			}
		}
		if diff := fidDiff(rs, oracle, state, 5); diff != "" {
			t.Errorf("%s snapshot %d: the replay differs from iceberg-go's read:\n%s", topic, s.id, diff)
		}
	}
	if next != len(recs) {
		t.Errorf("%d records left that belong to no readable snapshot", len(recs)-next)
	}

	// At the high watermark a fetch says why nothing more comes.
	code := hostileFetchCode(t, g.addr, topic, bounds[0][1], kgo.MaxVersions(kversion.V2_8_0()))
	if code != kerr.KafkaStorageError.Code {
		t.Errorf("fetch at the high watermark %d of the damaged table: error %v, want KAFKA_STORAGE_ERROR", bounds[0][1], kerr.ErrorForCode(code))
	}
	t.Logf("SUMMARY %s: %d records served (the snapshots before the damage), then %v", topic, len(recs), kerr.ErrorForCode(code))
}
