package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/lakegw/lakegw/changelog"
	"github.com/lakegw/lakegw/lake"
	"github.com/lakegw/lakegw/lsm"
	"github.com/lakegw/lakegw/maintain"
)

// A lakegw primary-key table keeps its topic's retention.ms of changes
// although its snapshots expire: the expired snapshots' changelog stays,
// listed in the changelog log, and the topic is the live rows of the
// oldest checkpoint followed by every later change. The offsets are a
// property of the table: a gateway that lost its state store serves the
// same records at the same offsets. Past retention, the log start moves to
// the next checkpoint and the changelog files before it are removed.
func TestLSMTopicKeepsRetentionPastSnapshotExpiry(t *testing.T) {
	ctx := context.Background()
	const buckets, keys = 2, 40
	ident := table.Identifier{"lsm", "kept"}
	dataDir, cat := newLSMCatalog(t, ident[0])
	tb, err := lsm.Create(ctx, cat, ident, lsmSchema, lsm.CreateOptions{PrimaryKey: []string{"id"}, Buckets: buckets,
		MergeEngine: lsm.EngineDeduplicate}, lsm.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Segments of four entries: the log's head, its sealed segments and
	// their truncation as the log start moves all take part.
	setTableProps(t, cat, ident, map[string]string{changelog.PropLSMLogSegmentEntries: "4"})
	rng := rand.New(rand.NewPCG(7, 11))
	m := lsmModel{}
	commit := func(n int) {
		t.Helper()
		for range n {
			w, err := tb.NewWriter(ctx)
			if err != nil {
				t.Fatal(err)
			}
			next := m.Clone()
			randomWrites(t, rng, w, next, 3+rng.IntN(10), keys)
			if _, err := w.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			m = next
		}
	}
	commit(6)
	// The first pass makes the head a checkpoint and expires nothing it
	// would need: the topic still starts at the table's first snapshot.
	expireLSM(t, cat, ident, 3)
	checkpoint := currentSnapshot(t, cat, ident)
	checkKeptFiles(t, cat, ident)
	commit(24)
	if _, err := tb.Compact(ctx, true); err != nil {
		t.Fatal(err)
	}
	commit(6)
	expireLSM(t, cat, ident, 3)

	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tbl.Metadata().Snapshots()); n > 5 {
		t.Fatalf("%d snapshots after expiry keeping 3 and a checkpoint", n)
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	log, err := changelog.ReadLSMLog(fsys, tbl.Properties()[changelog.PropLSMChangelogLog], nil)
	if err != nil {
		t.Fatal(err)
	}
	if start, ok := log.StartID(); !ok || start != checkpoint {
		t.Fatalf("changelog log %+v does not start after the checkpoint %d", log, checkpoint)
	}
	if len(log.Segments) < 2 {
		t.Fatalf("%d logged snapshots in %d segments of 4: the segments are not exercised", log.Len(), len(log.Segments))
	}
	// Each logged snapshot carries the size of its changelog, which
	// retention.bytes counts: the files on disk say the same.
	for e := range log.All() {
		if e.Manifest == "" {
			continue
		}
		m, err := changelog.ReadLSMManifest(fsys, e.Manifest)
		if err != nil {
			t.Fatal(err)
		}
		want := fileSize(t, e.Manifest)
		for _, f := range m.Files {
			want += fileSize(t, f.Path)
		}
		if e.Bytes != want {
			t.Fatalf("logged snapshot %d: %d bytes, its files hold %d", e.SnapshotID, e.Bytes, want)
		}
	}
	hist, err := changelog.LSMHistory(tbl.Metadata(), log)
	if err != nil {
		t.Fatal(err)
	}
	// Every change after the checkpoint, from the log and the main branch.
	var changes int64
	for _, h := range hist[1:] {
		s := tbl.Metadata().SnapshotByID(h.SnapshotID)
		if s == nil {
			s = log.Snapshot(h.SnapshotID, h.SequenceNumber)
		}
		counts, ok, err := changelog.CountsFromSummary(tbl.Properties(), s, buckets)
		if err != nil || !ok {
			t.Fatalf("snapshot %d: counts %v %v", h.SnapshotID, ok, err)
		}
		for _, c := range counts {
			changes += c
		}
	}

	checkKeptFiles(t, cat, ident)
	g := startGateway(t, dataDir, "")
	first := replayKept(t, g, cat, ident, buckets)
	if d := diffRows(first.state, lsmScan(t, cat, ident)); d != "" {
		t.Fatalf("replay from earliest differs from an iceberg-go scan:\n%s", d)
	}
	if first.changes != changes {
		t.Fatalf("replay served %d changes after the log start, the table kept %d", first.changes, changes)
	}
	if first.prefix == 0 {
		t.Fatal("the topic does not start with the checkpoint's live rows")
	}
	t.Logf("%d snapshots logged past expiry; the topic: %d live rows of checkpoint %d, then %d changes",
		log.Len(), first.prefix, checkpoint, first.changes)

	// Without its state store, a gateway serves the same offsets under
	// the same leader epochs.
	epochs := leaderEpochs(t, g.addr, "lsm.kept")
	g.stop()
	if err := os.Remove(filepath.Join(dataDir, "state.db")); err != nil {
		t.Fatal(err)
	}
	g = startGateway(t, dataDir, "")
	again := replayKept(t, g, cat, ident, buckets)
	if got := leaderEpochs(t, g.addr, "lsm.kept"); !slices.Equal(got, epochs) {
		t.Fatalf("leader epochs %v after losing state.db, %v before", got, epochs)
	}
	if strings.Join(again.records, "\n") != strings.Join(first.records, "\n") {
		t.Fatalf("after losing state.db the topic changed:\nbefore %d records, first %v\nafter %d records, first %v",
			len(first.records), head(first.records), len(again.records), head(again.records))
	}

	// Past retention the log start moves to the next checkpoint, and the
	// changelog files before it go.
	setTableProps(t, cat, ident, map[string]string{changelog.PropRetentionMs: "1"})
	expireLSM(t, cat, ident, 3) // a new checkpoint at the head
	commit(4)
	time.Sleep(5 * time.Millisecond)
	before := changelogFiles(t, dataDir)
	expireLSM(t, cat, ident, 3) // the old checkpoint is past retention
	moved := replayKept(t, g, cat, ident, buckets)
	if d := diffRows(moved.state, lsmScan(t, cat, ident)); d != "" {
		t.Fatalf("replay after the log start moved differs from an iceberg-go scan:\n%s", d)
	}
	// The files that left the topic go at the next expiry: a gateway
	// reading one of them as the log start moved has a pass to finish.
	starts := startOffsets(t, g, "lsm.kept", buckets)
	commit(2)
	expireLSM(t, cat, ident, 3)
	// Retention is 1 ms: the expiry's new checkpoint moves the log start.
	// The end offsets do not change with it, so wait for the start before
	// comparing this gateway with one that rebuilds its index.
	waitForStartsMoved(t, g, "lsm.kept", starts)
	after := changelogFiles(t, dataDir)
	t.Logf("changelog files: %d before the log start moved, %d after", before, after)
	if after >= before {
		t.Fatalf("%d changelog files before the retention pass, %d after", before, after)
	}
	live := replayKept(t, g, cat, ident, buckets)
	if d := diffRows(live.state, lsmScan(t, cat, ident)); d != "" {
		t.Fatalf("replay after the dropped changelog was deleted differs from an iceberg-go scan:\n%s", d)
	}
	// This gateway moved its log start itself, while serving: one that
	// rebuilds its index from the table serves the same records under the
	// same epochs.
	epochs = leaderEpochs(t, g.addr, "lsm.kept")
	g.stop()
	if err := os.Remove(filepath.Join(dataDir, "state.db")); err != nil {
		t.Fatal(err)
	}
	g = startGateway(t, dataDir, "")
	rebuilt := replayKept(t, g, cat, ident, buckets)
	if strings.Join(rebuilt.records, "\n") != strings.Join(live.records, "\n") {
		t.Fatalf("a rebuilt index serves other records than the live one: %d vs %d records, first %v vs %v",
			len(rebuilt.records), len(live.records), head(rebuilt.records), head(live.records))
	}
	if got := leaderEpochs(t, g.addr, "lsm.kept"); !slices.Equal(got, epochs) {
		t.Fatalf("leader epochs %v after rebuilding the index, %v in the gateway that moved the log start", got, epochs)
	}
	t.Logf("leader epochs %v", epochs)
}

// checkKeptFiles checks that orphan cleanup would keep the changelog of
// every snapshot the topic can still read: each one in the metadata (the
// main branch and the checkpoints) and each logged one.
func checkKeptFiles(t *testing.T, cat catalog.Catalog, ident table.Identifier) {
	t.Helper()
	ctx := context.Background()
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	keep, err := lsm.NewRetention(cat, zerolog.Nop()).KeepFiles(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var manifests []string
	for _, s := range tbl.Metadata().Snapshots() {
		if m := s.Summary.Properties[changelog.SummaryLSMManifest]; m != "" {
			manifests = append(manifests, m)
		}
	}
	if p := tbl.Properties()[changelog.PropLSMChangelogLog]; p != "" {
		log, err := changelog.ReadLSMLog(fsys, p, nil)
		if err != nil {
			t.Fatal(err)
		}
		for e := range log.All() {
			if e.Manifest != "" {
				manifests = append(manifests, e.Manifest)
			}
		}
	}
	for _, m := range manifests {
		lm, err := changelog.ReadLSMManifest(fsys, m)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range append([]string{m}, func() (ps []string) {
			for _, f := range lm.Files {
				ps = append(ps, f.Path)
			}
			return ps
		}()...) {
			if !keep[f] {
				t.Fatalf("orphan cleanup would delete %s, which the topic still reads", f)
			}
		}
	}
}

// leaderEpochs are the leader epochs of a topic's partitions in Metadata.
func leaderEpochs(t *testing.T, addr, topic string) []int32 {
	t.Helper()
	md, err := kadm.NewClient(mustClient(t, addr)).Metadata(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	td, ok := md.Topics[topic]
	if !ok || td.Err != nil {
		t.Fatalf("metadata of %s: %v %v", topic, ok, td.Err)
	}
	out := make([]int32, len(td.Partitions))
	for p, pd := range td.Partitions {
		out[p] = pd.LeaderEpoch
	}
	return out
}

func head(s []string) []string { return s[:min(len(s), 3)] }

// expireLSM runs one maintenance pass on an LSM table, as serve and
// `lakegw maintain` do, keeping the last n snapshots whatever their age.
func expireLSM(t *testing.T, cat catalog.Catalog, ident table.Identifier, n int) {
	t.Helper()
	setTableProps(t, cat, ident, map[string]string{table.MinSnapshotsToKeepKey: strconv.Itoa(n), table.MaxSnapshotAgeMsKey: "0"})
	log := zerolog.New(zerolog.NewTestWriter(t))
	_, err := maintain.Run(context.Background(), cat, ident, maintain.Options{Log: log, Retention: lsm.NewRetention(cat, log)})
	if err != nil {
		t.Fatal(err)
	}
}

func currentSnapshot(t *testing.T, cat catalog.Catalog, ident table.Identifier) int64 {
	t.Helper()
	tbl, err := cat.LoadTable(context.Background(), ident)
	if err != nil {
		t.Fatal(err)
	}
	return tbl.CurrentSnapshot().SnapshotID
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	st, err := os.Stat(strings.TrimPrefix(path, "file://"))
	if err != nil {
		t.Fatal(err)
	}
	return st.Size()
}

func changelogFiles(t *testing.T, dataDir string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dataDir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.Contains(path, string(filepath.Separator)+"changelog"+string(filepath.Separator)) {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// keptReplay is a topic read from its log start to its high watermark.
type keptReplay struct {
	state   map[string]string
	records []string // "partition/offset op value", in order per partition
	prefix  int64    // compacted-prefix rows
	changes int64    // change records after them
}

func replayKept(t *testing.T, g *gateway, cat catalog.Catalog, ident table.Identifier, buckets int) keptReplay {
	t.Helper()
	topic := lake.TopicName(ident)
	tbl, err := cat.LoadTable(context.Background(), ident)
	if err != nil {
		t.Fatal(err)
	}
	// The table's summaries say where each partition ends.
	want, ok, err := changelog.LSMEnds(tbl.Metadata(), tbl.CurrentSnapshot(), buckets)
	if err != nil || !ok {
		t.Fatalf("end offsets of %s: %v %v", topic, ok, err)
	}
	waitForEnds(t, g, topic, want)
	recs, _ := fidConsume(t, g.addr, topic)
	r := keptReplay{state: map[string]string{}}
	for p := range int32(buckets) {
		for _, rec := range recs[p] {
			var v struct {
				Before map[string]any `json:"before"`
				After  map[string]any `json:"after"`
				Op     string         `json:"op"`
			}
			dec := json.NewDecoder(strings.NewReader(string(rec.Value)))
			dec.UseNumber()
			if err := dec.Decode(&v); err != nil {
				t.Fatalf("%s/%d@%d: %v", topic, rec.Partition, rec.Offset, err)
			}
			r.records = append(r.records, fmt.Sprintf("%d/%d %s", rec.Partition, rec.Offset, rec.Value))
			switch v.Op {
			case "r", "c", "u":
				r.state[lsmVal(v.After["id"])] = lsmRowOfMap(v.After)
			case "d":
				delete(r.state, lsmVal(v.Before["id"]))
			default:
				t.Fatalf("%s/%d@%d: op %q", topic, rec.Partition, rec.Offset, v.Op)
			}
			if v.Op == "r" {
				r.prefix++
			} else {
				r.changes++
			}
		}
	}
	return r
}

// waitForEnds waits until the gateway's end offsets of topic are want.
// startOffsets returns the log start of each of the topic's partitions.
func startOffsets(t *testing.T, g *gateway, topic string, partitions int) []int64 {
	t.Helper()
	starts, err := kadm.NewClient(mustClient(t, g.addr)).ListStartOffsets(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int64, partitions)
	starts.Each(func(o kadm.ListedOffset) {
		if o.Topic == topic && o.Err == nil && int(o.Partition) < partitions {
			out[o.Partition] = o.Offset
		}
	})
	return out
}

// waitForStartsMoved waits until the topic's log start differs from before.
func waitForStartsMoved(t *testing.T, g *gateway, topic string, before []int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if got := startOffsets(t, g, topic, len(before)); !slices.Equal(got, before) {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: the log start stayed at %v; gateway logs:\n%s", topic, before, fidTail(g.Logs(), 30))
}

func waitForEnds(t *testing.T, g *gateway, topic string, want []int64) {
	t.Helper()
	adm := kadm.NewClient(mustClient(t, g.addr))
	deadline := time.Now().Add(30 * time.Second)
	var got []int64
	for time.Now().Before(deadline) {
		ends, err := adm.ListEndOffsets(context.Background(), topic)
		if err == nil {
			got = make([]int64, len(want))
			ends.Each(func(o kadm.ListedOffset) {
				if o.Topic == topic && o.Err == nil && int(o.Partition) < len(got) {
					got[o.Partition] = o.Offset
				}
			})
			if slices.Equal(got, want) {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: end offsets %v, the table's summaries say %v; gateway logs:\n%s", topic, got, want, fidTail(g.Logs(), 30))
}
