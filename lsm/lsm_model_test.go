package lsm

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/changelog"
	"github.com/lakegw/lakegw/derive"
	"github.com/lakegw/lakegw/internal/lsmmodel"
)

// model is the expected table, with partial-update semantics.
type model = lsmmodel.Model

// renderModel renders the model as id -> "id|name|qty|price".
func renderModel(m model) map[string]string {
	out := map[string]string{}
	for id, r := range m {
		out[fmt.Sprint(id)] = renderRow(r)
	}
	return out
}

func renderRow(r [4]any) string {
	return fmt.Sprintf("%s|%s|%s|%s", renderValue(r[0]), renderValue(r[1]), renderValue(r[2]), renderValue(r[3]))
}

// TestLsmRandomizedModel runs streams of upserts, deletes and partial
// updates with interleaved commits, compactions and crashing writers, on a
// v2 table (position delete files) and a v3 table (deletion vectors), and
// after every round checks the table against the model: the iceberg-go
// scan, the changelog replay with true before-images, point lookups, and
// the delete files of the snapshot (checkDeleteLayout).
func TestLsmRandomizedModel(t *testing.T) {
	for _, version := range formatVersions {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) { testRandomizedModel(t, version) })
	}
}

func testRandomizedModel(t *testing.T, version int) {
	ctx := context.Background()
	dir := t.TempDir()
	cat := testCatalog(t, dir)
	const buckets = 4
	tb := createTestTable(t, cat, "model", CreateOptions{Buckets: buckets, MergeEngine: EnginePartialUpdate, FormatVersion: version},
		Options{Compaction: CompactionOptions{Trigger: 3}})
	crashing, err := Open(ctx, cat, table.Identifier{"ns", "model"}, Options{BeforeCommit: func(context.Context) error {
		return errors.New("simulated crash")
	}})
	if err != nil {
		t.Fatal(err)
	}
	ident := table.Identifier{"ns", "model"}
	rng := rand.New(rand.NewPCG(7, 11))
	m := model{}
	replay := map[string]string{}
	rounds := 30
	if testing.Short() {
		rounds = 10
	}
	const keys = 60
	var layout deleteLayout
	withDeletes, replaced := 0, 0
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
		if err := lsmmodel.RandomWrites(rng, w, next, 5+rng.IntN(40), keys); err != nil {
			t.Fatal(err)
		}
		res, err := w.Commit(ctx)
		if crash {
			if err == nil {
				t.Fatalf("round %d: the crashing writer committed", round)
			}
		} else {
			if err != nil {
				t.Fatalf("round %d: %v", round, err)
			}
			m = next
			if res.SnapshotID != 0 {
				tbl, err := cat.LoadTable(ctx, ident)
				if err != nil {
					t.Fatal(err)
				}
				replayChanges(t, tbl, res.SnapshotID, replay)
			}
		}
		if rng.IntN(4) == 0 {
			cr, err := tb.Compact(ctx, rng.IntN(3) == 0)
			if err != nil {
				t.Fatalf("round %d compaction: %v", round, err)
			}
			if cr.SnapshotID != 0 {
				tbl, _ := cat.LoadTable(ctx, ident)
				replayChanges(t, tbl, cr.SnapshotID, replay)
			}
		}
		checkState(t, cat, tb, ident, m, replay, keys, round)
		now := checkDeleteLayout(t, cat, ident, version)
		replaced += replacedDVs(layout, now)
		if now.dvs+now.posDeleteFiles > 0 {
			withDeletes++
		}
		layout = now
	}
	// The delete files were exercised: on v3 some data file lost rows in
	// two commits, so its DV was replaced by the union.
	if withDeletes == 0 || version == 3 && replaced == 0 {
		t.Fatalf("v%d: %d rounds had delete files, %d DVs were replaced", version, withDeletes, replaced)
	}
	t.Logf("v%d: %d rounds with delete files, %d DVs replaced by a union", version, withDeletes, replaced)
}

// replayChanges applies the derived events of a snapshot to replay,
// checking that every before-image is the replayed row and every event's
// partition is its key's bucket.
func replayChanges(t *testing.T, tbl *table.Table, snapID int64, replay map[string]string) {
	t.Helper()
	ctx := context.Background()
	ref := snapshotRef(t, tbl, snapID)
	parts := int32(tbl.Properties().GetInt(PropPartitions, 1))
	sp, err := parseSpec(tbl.Schema(), tbl.Properties())
	if err != nil {
		t.Fatal(err)
	}
	c, err := derive.Derive(ctx, tbl, ref, derive.Options{Partitions: parts})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	summary, ok, err := changelog.CountsFromSummary(tbl.Properties(), tbl.Metadata().SnapshotByID(snapID), parts)
	if err != nil || !ok {
		t.Fatalf("counts from summary: %v %v", ok, err)
	}
	if got := c.CountByPartition(); fmt.Sprint(got) != fmt.Sprint(summary) {
		t.Fatalf("snapshot %d: derived counts %v, summary %v", snapID, got, summary)
	}
	for _, rec := range c.Records {
		var key string
		var img string
		if rec.Before.Valid() {
			img = renderArrowRow(t, c.Batches[rec.Before.Batch], int(rec.Before.Row))
			key = firstField(img)
			if replay[key] != img {
				t.Fatalf("snapshot %d: %s before-image %q, replayed row %q", snapID, rec.Op.Header(), img, replay[key])
			}
		} else if rec.After.Valid() {
			key = firstField(renderArrowRow(t, c.Batches[rec.After.Batch], int(rec.After.Row)))
			if _, ok := replay[key]; ok {
				t.Fatalf("snapshot %d: insert of live key %s", snapID, key)
			}
		}
		var id int64
		fmt.Sscan(key, &id)
		bs, err := bucketsOf(sp, []Row{{id, nil, nil, nil}})
		if err != nil {
			t.Fatal(err)
		}
		if int(rec.Partition) != bs[0] {
			t.Fatalf("key %s in partition %d, its bucket is %d", key, rec.Partition, bs[0])
		}
		if rec.After.Valid() {
			replay[key] = renderArrowRow(t, c.Batches[rec.After.Batch], int(rec.After.Row))
		} else {
			delete(replay, key)
		}
	}
}

func firstField(s string) string {
	for i := range s {
		if s[i] == '|' {
			return s[:i]
		}
	}
	return s
}

func checkState(t *testing.T, cat catalog.Catalog, tb *Table, ident table.Identifier, m model, replay map[string]string, keys int, round int) {
	t.Helper()
	ctx := context.Background()
	want := renderModel(m)
	if got := scanRows(t, cat, ident); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("round %d: iceberg-go scan\n got %v\nwant %v", round, got, want)
	}
	if fmt.Sprint(replay) != fmt.Sprint(want) {
		t.Fatalf("round %d: changelog replay\n got %v\nwant %v", round, replay, want)
	}
	for id := int64(0); id < int64(keys); id += 7 {
		row, ok, err := tb.Get(ctx, map[string]any{"id": id})
		if err != nil {
			t.Fatal(err)
		}
		w, has := want[fmt.Sprint(id)]
		if ok != has || ok && renderMap(row) != w {
			t.Fatalf("round %d: get %d = %v %v, want %v %v", round, id, row, ok, w, has)
		}
	}
	tbl, _ := cat.LoadTable(ctx, ident)
	for _, s := range tbl.Metadata().Snapshots() {
		if s.Summary != nil && s.Summary.Properties["total-equality-deletes"] != "" && s.Summary.Properties["total-equality-deletes"] != "0" {
			t.Fatalf("snapshot %d has equality deletes", s.SnapshotID)
		}
	}
}
