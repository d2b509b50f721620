package maintain

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/iceberg-go/table"
)

// mergeManifests merges the current snapshot's data manifests once it has
// more than Options.MaxManifests. The writers commit fast appends (RowDelta
// and the LSM writer do not honour commit.manifest-merge.enabled), one or
// two new manifests per commit, and iceberg-go's RowDelta validation reads
// the head's data manifests on every commit: a short manifest list keeps a
// writer's commit time independent of the history.
func (p *pass) mergeManifests(ctx context.Context, rep *ManifestReport) error {
	var committed *table.Table
	err := p.holdingWriters(ctx, func() error {
		var err error
		_, committed, err = p.commitStep(ctx, "manifest merge", p.stageManifestMerge(rep))
		return err
	})
	if errors.Is(err, errStarved) {
		// A merge is rebased on the head: a writer committing faster
		// than it can stage wins every race. The next pass tries again.
		p.log.Info().Err(err).Msg("manifest merge lost every race with the table's writers; next pass")
		rep.Skipped = fmt.Sprintf("writers committed during each of %d attempts", p.opts.CommitAttempts)
		return nil
	}
	if err != nil || committed == nil {
		return err
	}
	if rep.After, err = manifestCount(ctx, p.opts.Manifests, committed); err != nil {
		return err
	}
	if snap := committed.CurrentSnapshot(); snap != nil {
		rep.SnapshotID = snap.SnapshotID
	}
	p.log.Info().Int("before", rep.Before).Int("after", rep.After).Msg("merged manifests")
	return nil
}

// manifestCount is the length of the current snapshot's manifest list,
// read through the cache: each pass asks, and the list is most often one a
// pass read already.
func manifestCount(ctx context.Context, cache *ManifestCache, tbl *table.Table) (int, error) {
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		return 0, nil
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return 0, fmt.Errorf("file IO: %w", err)
	}
	mans, err := cache.manifests(fs, *snap)
	if err != nil {
		return 0, err
	}
	return len(mans), nil
}

// stageManifestMerge stages the merge of the head's data manifests when
// they are more than Options.MaxManifests.
func (p *pass) stageManifestMerge(rep *ManifestReport) stageFunc {
	return func(ctx context.Context, tbl *table.Table, tx *table.Transaction) (bool, error) {
		n, err := manifestCount(ctx, p.opts.Manifests, tbl)
		if err != nil {
			return false, err
		}
		rep.Before, rep.After = n, n
		if n <= p.opts.MaxManifests {
			return false, nil
		}
		if p.opts.DryRun {
			return true, nil
		}
		res, err := tx.RewriteManifests(ctx)
		if err != nil {
			return false, fmt.Errorf("rewrite manifests: %w", err)
		}
		return !res.IsNoOp(), nil
	}
}
