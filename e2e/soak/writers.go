package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/rs/zerolog"

	"github.com/lakegw/lakegw/changelog"
	"github.com/lakegw/lakegw/lake"
	"github.com/lakegw/lakegw/lsm"
	"github.com/lakegw/lakegw/quickstart"
)

// The three tables of the soak and their writers. Each writer commits as
// fast as it can, one snapshot per step, and times every commit.

var (
	pkIdent      = table.Identifier{"soak", "pk"}
	foreignIdent = table.Identifier{"soak", "foreign"}
)

// rowSchema is the schema of soak.pk and soak.foreign.
var rowSchema = iceberg.NewSchemaWithIdentifiers(0, []int{1},
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String},
	iceberg.NestedField{ID: 3, Name: "n", Type: iceberg.PrimitiveTypes.Int64},
)

// writer is one table's writer: step commits one snapshot.
type writer struct {
	topic string
	ident table.Identifier
	step  func(ctx context.Context) error
	// commits counts finished steps (read by the sampler); took holds each
	// step's duration, written only by the writer's goroutine and read
	// after it ends.
	commits atomic.Int64
	took    []time.Duration
	// finished is set when run returns: from then on the gateway's CPU is
	// no longer shared by every writer's commits (growthRatios).
	finished atomic.Bool
	// foreign marks the writer that is not lakegw's; expiries counts its
	// own expire_snapshots commits.
	foreign     bool
	expiries    int
	compactions int
}

// run commits n snapshots.
func (w *writer) run(ctx context.Context, n int) error {
	defer w.finished.Store(true)
	for range n {
		t0 := time.Now()
		if err := w.step(ctx); err != nil {
			return fmt.Errorf("%s: commit %d: %w", w.topic, w.commits.Load()+1, err)
		}
		w.took = append(w.took, time.Since(t0))
		w.commits.Add(1)
	}
	return nil
}

// newDemoWriter writes demo.orders with the quickstart demo, in process.
func newDemoWriter(ctx context.Context, cat catalog.Catalog, c config) (*writer, error) {
	// A streaming table in a steady state: as many orders are deleted as
	// are placed, on average, so the live table stays near its first
	// size and what grows is history alone.
	d := quickstart.NewDemo(cat, zerolog.Nop(), quickstart.DemoOptions{Seed: 11, InitialOrders: 2000,
		MinInsertsPerStep: 3, MaxInsertsPerStep: 5, MaxDeletesPerStep: 8})
	if _, err := d.Ensure(ctx); err != nil {
		return nil, fmt.Errorf("create %s: %w", quickstart.DefaultTableName, err)
	}
	if err := setExpiryProps(ctx, cat, quickstart.DefaultTable(), c); err != nil {
		return nil, err
	}
	return &writer{topic: quickstart.DefaultTableName, ident: quickstart.DefaultTable(), step: func(ctx context.Context) error {
		_, err := d.Step(ctx)
		return err
	}}, nil
}

// newPKWriter writes soak.pk, a lakegw primary-key table of one bucket:
// every commit upserts and deletes pkChanges distinct keys of a bounded
// key space, so the live table stays the same size as history grows.
func newPKWriter(ctx context.Context, cat catalog.Catalog, c config) (*writer, error) {
	props := iceberg.Properties{}
	if c.maintain {
		props = expiryProps(c)
		// Its topic keeps changes past snapshot expiry for this long.
		props[changelog.PropRetentionMs] = fmt.Sprint(c.changelogRetention.Milliseconds())
	}
	t, err := lsm.Create(ctx, cat, pkIdent, rowSchema, lsm.CreateOptions{
		PrimaryKey: []string{"id"}, Buckets: 1, MergeEngine: lsm.EngineDeduplicate, Properties: props,
	}, lsm.Options{Log: zerolog.Nop()})
	if err != nil {
		return nil, fmt.Errorf("create soak.pk: %w", err)
	}
	lw, err := t.NewWriter(ctx)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(12, 12))
	live := map[int64]int64{} // key -> version; bounded by c.keys
	return &writer{topic: "soak.pk", ident: pkIdent, step: func(ctx context.Context) error {
		seen := map[int64]bool{}
		for len(seen) < c.pkChanges {
			id := 1 + rng.Int64N(int64(c.keys))
			if seen[id] {
				continue
			}
			seen[id] = true
			if _, ok := live[id]; ok && rng.IntN(4) == 0 {
				if err := lw.Delete(map[string]any{"id": id}); err != nil {
					return err
				}
				delete(live, id)
				continue
			}
			live[id]++
			if err := lw.Upsert(map[string]any{"id": id, "name": fmt.Sprintf("pk-%d-v%d", id, live[id]), "n": live[id]}); err != nil {
				return err
			}
		}
		res, err := lw.Commit(ctx)
		if err != nil {
			return err
		}
		if res.SnapshotID == 0 {
			return errors.New("the commit made no snapshot")
		}
		return nil
	}}, nil
}

// newForeignWriter writes soak.foreign with iceberg-go alone, as any other
// engine would: appends of new rows, and every fourth commit a
// (copy-on-write) delete of live rows. Every c.foreignExpireEvery commits
// it expires its own snapshots, keeping the last c.foreignRetain: the
// history the gateway serves ends, and the topic gets a compacted prefix.
//
// Like the other two tables it is a streaming table in a steady state, as
// a well-kept foreign table is: once c.foreignLive rows are live a delete
// removes as many rows as the appends between two deletes add, and its
// appends merge manifests (commit.manifest-merge.enabled, Java Iceberg's
// default; iceberg-go's is off). Without both, its writer's own commit
// time grows with the history (500 ms a commit after 2,000, from 150) and
// a long soak would time the foreign writer, not the gateway.
func newForeignWriter(ctx context.Context, cat catalog.Catalog, c config) (*writer, error) {
	tbl, err := cat.CreateTable(ctx, foreignIdent, rowSchema, catalog.WithProperties(iceberg.Properties{
		"format-version": "2", table.ManifestMergeEnabledKey: "true"}))
	if err != nil {
		return nil, fmt.Errorf("create soak.foreign: %w", err)
	}
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(13, 13))
	var next int64 = 1
	var live []int64
	w := &writer{topic: "soak.foreign", ident: foreignIdent, foreign: true}
	step := 0
	w.step = func(ctx context.Context) error {
		step++
		if step%4 == 0 && len(live) > 10 {
			// Three appends of foreignAppendRows since the last delete.
			n := 2
			if len(live) > c.foreignLive {
				n = 3 * foreignAppendRows
			}
			var ids []int64
			for range n {
				i := rng.IntN(len(live))
				ids = append(ids, live[i])
				live[i] = live[len(live)-1]
				live = live[:len(live)-1]
			}
			if err := commitRetry(ctx, cat, foreignIdent, func(tx *table.Transaction) error {
				return tx.Delete(ctx, iceberg.IsIn(iceberg.Reference("id"), ids...), nil)
			}); err != nil {
				return fmt.Errorf("delete: %w", err)
			}
		} else {
			rec := foreignRows(sc, next, foreignAppendRows)
			next += foreignAppendRows
			for id := next - foreignAppendRows; id < next; id++ {
				live = append(live, id)
			}
			at := array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
			err := commitRetry(ctx, cat, foreignIdent, func(tx *table.Transaction) error {
				return tx.AppendTable(ctx, at, foreignAppendRows, nil)
			})
			at.Release()
			rec.Release()
			if err != nil {
				return fmt.Errorf("append: %w", err)
			}
		}
		if c.foreignCompactEvery > 0 && step%c.foreignCompactEvery == 0 {
			if err := compactForeign(ctx, cat); err != nil {
				return fmt.Errorf("compact: %w", err)
			}
			w.compactions++
		}
		if c.foreignExpireEvery > 0 && step%c.foreignExpireEvery == 0 {
			if err := commitRetry(ctx, cat, foreignIdent, func(tx *table.Transaction) error {
				return tx.ExpireSnapshots(table.WithRetainLast(c.foreignRetain), table.WithOlderThan(0))
			}); err != nil {
				return fmt.Errorf("expire snapshots: %w", err)
			}
			w.expiries++
		}
		return nil
	}
	return w, nil
}

// compactForeign rewrites soak.foreign's live rows into one data file, as
// a scheduled rewrite_data_files keeps a well-kept table: its appends add a
// file each and its copy-on-write deletes rewrite files into smaller ones,
// so without it the live files grow towards one per live row (900 after
// 2,400 commits), and every snapshot's merged manifest, which the gateway
// reads to derive it, grows with them. The result is a replace snapshot,
// which yields no change records.
func compactForeign(ctx context.Context, cat catalog.Catalog) error {
	var err error
	for range 5 {
		var tbl *table.Table
		if tbl, err = cat.LoadTable(ctx, foreignIdent); err != nil {
			return err
		}
		tasks, err := tbl.Scan().PlanFiles(ctx)
		if err != nil {
			return fmt.Errorf("plan files: %w", err)
		}
		if len(tasks) < 2 {
			return nil
		}
		var size int64
		for _, t := range tasks {
			size += t.File.FileSizeBytes()
		}
		gr, err := table.ExecuteCompactionGroup(ctx, tbl, table.CompactionTaskGroup{Tasks: tasks, TotalSizeBytes: size})
		if err != nil {
			return fmt.Errorf("rewrite data files: %w", err)
		}
		tx := tbl.NewTransaction()
		if err := tx.NewRewrite(nil).ApplyResult(gr).Commit(ctx); err != nil {
			return fmt.Errorf("stage rewrite: %w", err)
		}
		_, err = tx.Commit(ctx)
		if err == nil || !strings.Contains(err.Error(), "has changed") {
			return err
		}
		// Lost the race with the soak's other writer of it (the
		// gateway does not maintain it): the rewrite's files go.
		var written []string
		for _, f := range gr.NewDataFiles {
			written = append(written, f.FilePath())
		}
		if _, rerr := lake.RemoveFiles(ctx, tbl, written); rerr != nil {
			return fmt.Errorf("remove the files of a lost rewrite: %w", rerr)
		}
	}
	return err
}

// foreignAppendRows is the number of rows of each append to soak.foreign.
const foreignAppendRows = 5

func foreignRows(sc *arrow.Schema, first int64, n int) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for id := first; id < first+int64(n); id++ {
		b.Field(0).(*array.Int64Builder).Append(id)
		b.Field(1).(*array.StringBuilder).Append(fmt.Sprintf("foreign-%d", id))
		b.Field(2).(*array.Int64Builder).Append(id * 7)
	}
	return b.NewRecordBatch()
}

// commitRetry runs one transaction on the current table and commits it,
// reloading and redoing it when another writer (the gateway's maintenance)
// committed first: iceberg-go's SQL catalog does not retry a stale commit.
func commitRetry(ctx context.Context, cat catalog.Catalog, ident table.Identifier, do func(*table.Transaction) error) error {
	var err error
	for range 5 {
		var tbl *table.Table
		if tbl, err = cat.LoadTable(ctx, ident); err != nil {
			return err
		}
		tx := tbl.NewTransaction()
		if err = do(tx); err != nil {
			return err
		}
		committed, err := tx.Commit(ctx)
		if committed != nil && errors.Is(err, fs.ErrNotExist) {
			// ExpireSnapshots committed, then its clean-up found a file
			// already gone (iceberg-go v0.7.0 lists a file an earlier
			// expiry removed): the table is as wanted.
			return nil
		}
		if err == nil || !strings.Contains(err.Error(), "has changed") {
			return err
		}
	}
	return err
}

// expiryProps are the snapshot expiry properties of the tables lakegw
// writes, with -maintain (issue 11 point 2).
func expiryProps(c config) iceberg.Properties {
	return iceberg.Properties{
		changelog.PropMaintenanceEnabled: "true",
		table.MaxSnapshotAgeMsKey:        fmt.Sprint(c.expireAge.Milliseconds()),
		table.MinSnapshotsToKeepKey:      fmt.Sprint(c.keepSnapshots),
		changelog.PropMaxPinMs:           fmt.Sprint(c.maxPin.Milliseconds()),
	}
}

// setExpiryProps sets expiryProps on an existing table, with -maintain.
func setExpiryProps(ctx context.Context, cat catalog.Catalog, ident table.Identifier, c config) error {
	if !c.maintain {
		return nil
	}
	if err := commitRetry(ctx, cat, ident, func(tx *table.Transaction) error {
		return tx.SetProperties(expiryProps(c))
	}); err != nil {
		return fmt.Errorf("set expiry properties of %v: %w", ident, err)
	}
	return nil
}
