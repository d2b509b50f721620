package lsm

import (
	"context"
	"fmt"
	"sync"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"golang.org/x/sync/errgroup"

	"github.com/lakegw/lakegw/changelog"
	"github.com/lakegw/lakegw/lake"
)

// commitOnce prepares every written bucket in parallel against the table's
// head (phase one: all files written), then commits them in one RowDelta
// pinned to that head (phase two). A crash in between leaves only files no
// metadata references. On a conflict the files are removed and the caller
// redoes everything on the new head.
func (t *Table) commitOnce(ctx context.Context, tbl *table.Table, sp *spec, writes []bucketWrites, extra iceberg.Properties) (snapshotID int64, counts, ends []int64, written int64, err error) {
	st, err := loadState(ctx, tbl, sp, nil)
	if err != nil {
		return 0, nil, nil, 0, err
	}
	fs, err := writeFS(ctx, tbl)
	if err != nil {
		return 0, nil, nil, 0, err
	}
	outs := make([]*bucketOut, len(writes))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(t.opts.Parallelism)
	var mu sync.Mutex
	var paths []string
	for i, bw := range writes {
		g.Go(func() error {
			out, err := t.prepareBucket(gctx, fs, tbl, sp, st, bw)
			mu.Lock()
			paths = append(paths, out.written...)
			mu.Unlock()
			outs[i] = out
			return err
		})
	}
	if err := g.Wait(); err != nil {
		removeFiles(fs, paths)
		return 0, nil, nil, 0, err
	}
	counts = make([]int64, sp.buckets)
	manifest := changelog.LSMManifest{Buckets: sp.buckets}
	var data, deletes, removed []iceberg.DataFile
	for _, o := range outs {
		written += o.bytes
		if o.data != nil {
			data = append(data, o.data)
		}
		deletes = append(deletes, o.deletes...)
		removed = append(removed, o.removedDVs...)
		if o.changelog != nil {
			manifest.Files = append(manifest.Files, *o.changelog)
			counts[o.bucket] = o.records
		}
	}
	if len(data) == 0 && len(deletes) == 0 {
		removeFiles(fs, paths)
		return 0, nil, nil, written, nil // every write was a no-op
	}
	body, err := changelog.EncodeLSMManifest(manifest)
	if err != nil {
		removeFiles(fs, paths)
		return 0, nil, nil, written, err
	}
	mpath := newLayout(tbl.Location()).changelogManifest(st.seq)
	paths = append(paths, mpath)
	if err := fs.WriteFile(mpath, body); err != nil {
		removeFiles(fs, paths)
		return 0, nil, nil, written, fmt.Errorf("write %s: %w", mpath, err)
	}
	written += int64(len(body))
	if t.opts.BeforeCommit != nil {
		if err := t.opts.BeforeCommit(ctx); err != nil {
			// A simulated crash: the files stay behind, unreferenced.
			return 0, nil, nil, written, fmt.Errorf("before commit: %w", err)
		}
	}
	props := iceberg.Properties{
		changelog.SummaryLSMManifest: mpath,
		changelog.SummaryLSMCounts:   changelog.EncodeLSMCounts(counts),
	}
	for k, v := range extra {
		if _, ours := props[k]; !ours {
			props[k] = v
		}
	}
	if err := addEnds(tbl, sp.buckets, counts, props); err != nil {
		removeFiles(fs, paths)
		return 0, nil, nil, written, err
	}
	committed, err := commitRowDelta(ctx, tbl, props, data, deletes, removed)
	if err != nil {
		// Only a clean conflict proves the catalog did not take the
		// snapshot; after any other failure the files may be live.
		if lake.IsCommitConflict(err) {
			removeFiles(fs, paths)
		}
		return 0, nil, nil, written, err
	}
	snap := committed.CurrentSnapshot()
	if snap == nil {
		return 0, nil, nil, written, fmt.Errorf("commit to %s left no current snapshot", t.Name())
	}
	t.log.Debug().Int64("snapshot_id", snap.SnapshotID).Int64("sequence_number", snap.SequenceNumber).
		Int("data_files", len(data)).Int("delete_files", len(deletes)).Int("superseded_dvs", len(removed)).Ints64("changes", counts).Msg("LSM commit")
	// The ends this commit recorded (none when its head's were unknown).
	// The commit stands whatever they say: an error here must not make a
	// caller redo it.
	ends, _, endsErr := changelog.LSMEnds(committed.Metadata(), snap, sp.buckets)
	if endsErr != nil {
		t.log.Warn().Err(endsErr).Int64("snapshot_id", snap.SnapshotID).Msg("end offsets after a commit are unreadable")
		ends = nil
	}
	return snap.SnapshotID, counts, ends, written, nil
}

// commitRowDelta commits data and delete files in one snapshot pinned to
// the head the files were prepared against, removing the deletion vectors
// that the new ones supersede (v3: one live DV per data file). iceberg-go
// would otherwise replay the delta on a newer head (with
// commit.retry.num-retries), and a blind replay leaves two live images of a
// key the other writer updated.
func commitRowDelta(ctx context.Context, tbl *table.Table, props iceberg.Properties, data, deletes, removedDVs []iceberg.DataFile) (*table.Table, error) {
	tx := tbl.NewTransaction()
	if err := tx.AssertRefSnapshotID(table.MainBranch); err != nil {
		return nil, fmt.Errorf("pin branch: %w", err)
	}
	rd := tx.NewRowDelta(props)
	rd.AddRows(data...).AddDeletes(deletes...).RemoveDeletes(removedDVs...)
	if err := rd.Commit(ctx); err != nil {
		return nil, fmt.Errorf("stage row delta: %w", err)
	}
	// On a conflict its staged manifest list and manifests go too.
	committed, err := lake.CommitOrClean(ctx, tbl, tx)
	if err != nil {
		return nil, fmt.Errorf("commit row delta: %w", err)
	}
	return committed, nil
}

func writeFS(ctx context.Context, tbl *table.Table) (icebergio.WriteFileIO, error) {
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return nil, fmt.Errorf("file IO: %w", err)
	}
	wfs, ok := fsys.(icebergio.WriteFileIO)
	if !ok {
		return nil, fmt.Errorf("file IO %T cannot write", fsys)
	}
	return wfs, nil
}

// removeFiles deletes files of a commit that never happened; best effort
// (a leftover is unreferenced garbage, not an error).
func removeFiles(fs icebergio.IO, paths []string) {
	for _, p := range paths {
		_ = fs.Remove(p)
	}
}

// addEnds records in a snapshot's summary the end offset of every bucket
// after it: the head's ends plus the snapshot's own counts (nil for a
// compaction). The commit is pinned to that head, so the ends are exact.
// When the head's ends are unknown (its history was expired before ends
// were recorded) none are written and the gateway numbers as before.
func addEnds(head *table.Table, buckets int, counts []int64, props iceberg.Properties) error {
	ends := make([]int64, buckets)
	if snap := head.CurrentSnapshot(); snap != nil {
		prev, ok, err := changelog.LSMEnds(head.Metadata(), snap, buckets)
		if err != nil {
			return fmt.Errorf("offsets before this commit: %w", err)
		}
		if !ok {
			return nil
		}
		copy(ends, prev)
	}
	for i := range counts {
		ends[i] += counts[i]
	}
	props[changelog.SummaryLSMEnds] = changelog.EncodeLSMEnds(ends)
	return nil
}
