package lsm

import (
	"context"
	"errors"
	"fmt"
	"github.com/lakegw/lakegw/lake"
	"slices"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"golang.org/x/sync/errgroup"

	icefiles "github.com/lakegw/lakegw/lake/files"
)

// CompactResult says what a compaction did.
type CompactResult struct {
	// SnapshotID is the replace snapshot; 0 when nothing needed merging.
	SnapshotID           int64
	Buckets              int
	FilesIn, FilesOut    int
	DeleteFilesDropped   int
	BytesIn, BytesOut    int64
	RowsIn, RowsOut      int64
	Attempts             int
	PickedRunsPerBucket  map[int]int
	OutputLevelPerBucket map[int]int
}

// compactOut is the merge of one bucket's picked runs.
type compactOut struct {
	bucket   int
	level    int
	inputs   []*runFile
	data     iceberg.DataFile // nil when every input row was deleted
	path     string
	bytesIn  int64
	bytesOut int64
	rowsIn   int64
	rowsOut  int64
}

// Compact runs universal compaction on every bucket that needs it (full:
// merges every run of every bucket, as `lakegw compact` does) and commits
// one replace snapshot: the merged runs replace their inputs, deleted rows
// are dropped physically, the position delete files and deletion vectors of
// the inputs go. No row changes, so the snapshot has no change events. A
// conflict with a writer (which may have deleted rows in the inputs
// meanwhile) redoes it on the new head. lakegw's writers hold their commits
// while it runs (lake.PropCompactionLease), set once it has found work.
func (t *Table) Compact(ctx context.Context, full bool) (res CompactResult, err error) {
	leased := false
	defer func() {
		// The compaction's commit ends the lease; anything else ends it here.
		if leased && res.SnapshotID == 0 {
			if lerr := lake.EndCompactionLease(context.WithoutCancel(ctx), t.cat, t.ident); lerr != nil {
				t.log.Warn().Err(lerr).Msg("could not end the compaction lease; it ends by itself")
			}
		}
	}()
	var lastErr error
	for attempt := 1; attempt <= t.opts.MaxCommitAttempts; attempt++ {
		res.Attempts = attempt
		r, err := t.compactOnce(ctx, full, leased)
		if errors.Is(err, errLeaseNeeded) {
			if err := lake.TakeCompactionLease(ctx, t.cat, t.ident); err != nil {
				return res, err
			}
			leased = true
			attempt--
			continue
		}
		if err == nil {
			r.Attempts = attempt
			return r, nil
		}
		if !lake.IsCommitConflict(err) {
			return res, err
		}
		lastErr = err
		t.log.Info().Err(err).Int("attempt", attempt).Msg("compaction conflicted with a writer; redoing it on the new head")
	}
	return res, fmt.Errorf("compact %s: gave up after %d conflicting attempts: %w", t.Name(), t.opts.MaxCommitAttempts, lastErr)
}

// errLeaseNeeded makes Compact take the compaction lease and plan again:
// compactOnce found work and holds no lease yet.
var errLeaseNeeded = errors.New("compaction lease needed")

func (t *Table) compactOnce(ctx context.Context, full, leased bool) (CompactResult, error) {
	res := CompactResult{PickedRunsPerBucket: map[int]int{}, OutputLevelPerBucket: map[int]int{}}
	tbl, sp, err := t.load(ctx)
	if err != nil {
		return res, err
	}
	st, err := loadState(ctx, tbl, sp, nil)
	if err != nil {
		return res, err
	}
	t.cache.retainOnly(st.cacheKeys())
	fs, err := writeFS(ctx, tbl)
	if err != nil {
		return res, err
	}
	type job struct {
		bucket int
		unit   *compactionUnit
	}
	var jobs []job
	for b, files := range st.buckets {
		if u := t.opts.Compaction.pick(runsOf(files), full); u != nil {
			jobs = append(jobs, job{b, u})
			res.PickedRunsPerBucket[b] = len(u.runs)
			res.OutputLevelPerBucket[b] = u.level
		}
	}
	if len(jobs) == 0 {
		return res, nil
	}
	if !leased {
		return res, errLeaseNeeded
	}
	outs := make([]*compactOut, len(jobs))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(t.opts.Parallelism)
	var mu sync.Mutex
	var paths []string
	for i, j := range jobs {
		g.Go(func() error {
			out, err := t.compactBucket(gctx, fs, tbl, sp, j.bucket, j.unit)
			if out != nil && out.path != "" {
				mu.Lock()
				paths = append(paths, out.path)
				mu.Unlock()
			}
			outs[i] = out
			return err
		})
	}
	if err := g.Wait(); err != nil {
		removeFiles(fs, paths)
		return res, err
	}
	tx := tbl.NewTransaction()
	if err := tx.AssertRefSnapshotID(table.MainBranch); err != nil {
		removeFiles(fs, paths)
		return res, fmt.Errorf("pin branch: %w", err)
	}
	if err := lake.EndLeaseIn(tx); err != nil {
		removeFiles(fs, paths)
		return res, err
	}
	props := iceberg.Properties{SummaryCompaction: "true"}
	if err := addEnds(tbl, sp.buckets, nil, props); err != nil {
		removeFiles(fs, paths)
		return res, err
	}
	rw := tx.NewRewrite(props)
	shadowed, err := shadowedPositionDeletes(fs, st, outs)
	if err != nil {
		removeFiles(fs, paths)
		return res, err
	}
	for _, d := range shadowed {
		rw.DeleteFile(d)
		res.DeleteFilesDropped++
	}
	var dataSeq int64
	for _, o := range outs {
		res.Buckets++
		res.FilesIn += len(o.inputs)
		res.BytesIn, res.BytesOut = res.BytesIn+o.bytesIn, res.BytesOut+o.bytesOut
		res.RowsIn, res.RowsOut = res.RowsIn+o.rowsIn, res.RowsOut+o.rowsOut
		for _, f := range o.inputs {
			rw.DeleteFile(f.df)
			dataSeq = max(dataSeq, f.dataSeq)
			// lakegw's delete files and deletion vectors are
			// file-scoped: they go with their data file.
			for _, d := range f.deleteFiles() {
				rw.DeleteFile(d)
				res.DeleteFilesDropped++
			}
		}
		if o.data != nil {
			rw.AddDataFile(o.data)
			res.FilesOut++
		}
	}
	// The merged files keep the newest data sequence number of their
	// inputs, so deletes that applied to the inputs' rows by sequence
	// number would still apply to them.
	rw.DataSequenceNumber(dataSeq)
	if err := rw.Commit(ctx); err != nil {
		removeFiles(fs, paths)
		return res, fmt.Errorf("stage rewrite: %w", err)
	}
	committed, err := lake.CommitOrClean(ctx, tbl, tx)
	if err != nil {
		if lake.IsCommitConflict(err) {
			removeFiles(fs, paths)
		}
		return res, fmt.Errorf("commit rewrite: %w", err)
	}
	if snap := committed.CurrentSnapshot(); snap != nil {
		res.SnapshotID = snap.SnapshotID
	}
	t.forgetReplaced(outs, shadowed)
	t.log.Info().Int64("snapshot_id", res.SnapshotID).Int("buckets", res.Buckets).Int("files_in", res.FilesIn).
		Int("files_out", res.FilesOut).Int64("bytes_in", res.BytesIn).Int64("bytes_out", res.BytesOut).
		Int64("rows_out", res.RowsOut).Msg("LSM compaction committed")
	return res, nil
}

// forgetReplaced drops from the file cache what a committed compaction
// replaced: its input runs, their delete files and deletion vectors, and
// the shadowed position deletes it removed. No lookup reads them again.
func (t *Table) forgetReplaced(outs []*compactOut, shadowed []iceberg.DataFile) {
	var keys []string
	forgetDelete := func(d iceberg.DataFile) {
		keys = append(keys, deleteCacheKey(d.FilePath()), dvCacheKey(d))
	}
	for _, o := range outs {
		for _, f := range o.inputs {
			keys = append(keys, runCacheKey(f.path))
			for _, d := range f.deleteFiles() {
				forgetDelete(d)
			}
		}
	}
	for _, d := range shadowed {
		forgetDelete(d)
	}
	t.cache.forget(keys...)
}

// shadowedPositionDeletes finds the position delete files of the inputs
// that scan planning leaves out because a DV shadows them: on a table
// upgraded from v2 to v3, the first DV of a data file holds the positions
// of its position delete files too, but iceberg-go's RowDelta removes only
// DVs, so those files stay live, ignored by readers, until compaction
// removes them with their data file here.
func shadowedPositionDeletes(fs icebergio.IO, st *state, outs []*compactOut) ([]iceberg.DataFile, error) {
	inputs := map[string]*runFile{}
	for _, o := range outs {
		for _, f := range o.inputs {
			if f.dv != nil {
				inputs[f.path] = f
			}
		}
	}
	snap := st.tbl.CurrentSnapshot()
	if len(inputs) == 0 || snap == nil {
		return nil, nil
	}
	mans, err := snap.Manifests(fs)
	if err != nil {
		return nil, fmt.Errorf("manifests of snapshot %d: %w", snap.SnapshotID, err)
	}
	var out []iceberg.DataFile
	seen := map[string]bool{}
	for _, m := range mans {
		if m.ManifestContent() != iceberg.ManifestContentDeletes {
			continue
		}
		entries, err := icefiles.ManifestEntries(fs, m, true)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			df := e.DataFile()
			if df.ContentType() != iceberg.EntryContentPosDeletes || table.IsDeletionVector(df) || seen[df.FilePath()] {
				continue
			}
			if f := inputs[icefiles.PositionDeleteTarget(df)]; f != nil && !slices.ContainsFunc(f.deletes, func(d iceberg.DataFile) bool { return d.FilePath() == df.FilePath() }) {
				seen[df.FilePath()] = true
				out = append(out, df)
			}
		}
	}
	return out, nil
}

// compactBucket merges the picked runs of a bucket into one file of the
// output level, dropping deleted rows.
func (t *Table) compactBucket(ctx context.Context, fs icebergio.WriteFileIO, tbl *table.Table, sp *spec, bucket int, u *compactionUnit) (*compactOut, error) {
	out := &compactOut{bucket: bucket, level: u.level}
	type img struct {
		key string
		row Row
		seq int64
	}
	best := map[string]img{}
	var maxSeq int64
	for _, r := range u.runs {
		for _, f := range r.files {
			out.inputs = append(out.inputs, f)
			out.bytesIn += f.df.FileSizeBytes()
			maxSeq = max(maxSeq, f.seq)
			data, err := t.runData(ctx, fs, sp, f.path)
			if err != nil {
				return out, err
			}
			deleted, err := t.deletedPositions(ctx, fs, f)
			if err != nil {
				return out, err
			}
			out.rowsIn += int64(len(data.rows))
			for pos, row := range data.rows {
				if deleted[int64(pos)] {
					continue
				}
				k := data.keys[pos]
				if prev, ok := best[k]; ok && prev.seq >= data.seqs[pos] {
					continue
				}
				best[k] = img{key: k, row: row, seq: data.seqs[pos]}
			}
		}
	}
	if len(best) == 0 {
		return out, nil
	}
	imgs := make([]img, 0, len(best))
	for _, v := range best {
		imgs = append(imgs, v)
	}
	slices.SortFunc(imgs, func(a, b img) int { return compareStrings(a.key, b.key) })
	rows := make([]Row, len(imgs))
	seqs := make([]int64, len(imgs))
	for i, v := range imgs {
		rows[i], seqs[i] = v.row, v.seq
	}
	out.path = newLayout(tbl.Location()).dataFile(bucket, u.level, maxSeq)
	df, n, err := writeRun(fs, tbl, sp, out.path, rows, seqs)
	if err != nil {
		return out, err
	}
	out.data, out.bytesOut, out.rowsOut = df, n, int64(len(rows))
	// The merged run is the hottest file of the bucket from now on.
	d := &runData{rows: rows, seqs: seqs, index: make(map[string]int32, len(rows))}
	for i, v := range imgs {
		d.keys = append(d.keys, v.key)
		d.index[v.key] = int32(i)
		d.bytes += int64(len(v.key))*2 + 64 + int64(len(v.row))*24
	}
	t.cache.add(runCacheKey(out.path), d, d.bytes)
	return out, nil
}

// RunCompactor compacts the buckets that need it every interval until ctx
// ends; the caller owns the goroutine. Errors are logged and retried at
// the next tick.
func (t *Table) RunCompactor(ctx context.Context, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if _, err := t.Compact(ctx, false); err != nil && ctx.Err() == nil {
			t.log.Warn().Err(err).Msg("background compaction failed; retrying at the next interval")
		}
	}
}
