package maintain

import (
	"context"
	"fmt"
	"github.com/lakegw/lakegw/lake"
	"strings"

	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/changelog"
)

// Where a lakegw LSM table keeps files that no Iceberg metadata references
// (lsm/layout.go): its change events and, per snapshot, the JSON list of
// them named by the snapshot summary key changelog.SummaryLSMManifest.
const (
	lsmChangelogDir      = "changelog/"
	lsmChangelogManifest = "metadata/lsm-changelog-"
)

// removeOrphans removes files under the table location that no metadata
// references and that are older than the grace period. A lakegw LSM
// table's changelog files are outside Iceberg metadata by design: with a
// Retention hook only the files it lists are kept, without one every
// changelog file and changelog manifest is kept.
func (p *pass) removeOrphans(ctx context.Context, rep *OrphanReport) error {
	tbl, plan, err := p.planOrphans(ctx, rep)
	if err != nil {
		return err
	}
	keep, err := p.keepFile(ctx, tbl)
	if err != nil {
		return err
	}
	var orphans []string
	for _, f := range plan.Files() {
		rep.Found++
		if keep(f) {
			rep.Kept++
			continue
		}
		orphans = append(orphans, f)
	}
	if p.opts.DryRun {
		rep.Removed = len(orphans)
		return nil
	}
	rep.Removed, err = lake.RemoveFiles(ctx, tbl, orphans)
	if err != nil {
		return fmt.Errorf("orphan cleanup of %s: %w", p.name, err)
	}
	if rep.Removed > 0 {
		p.log.Info().Int("removed", rep.Removed).Int("kept", rep.Kept).Dur("older_than", rep.Grace).Msg("removed orphan files")
	}
	return nil
}

// orphanPlanAttempts bounds the plans of orphan cleanup on a table whose
// head moved while one was read.
const orphanPlanAttempts = 5

// planOrphans plans orphan cleanup on the newest head. A raw topic's
// writer expires a snapshot and removes its manifest list with nearly
// every commit (maintain.HistoryCap), so a plan reading the snapshots of
// an older head may find one gone: it is planned again on the new head.
func (p *pass) planOrphans(ctx context.Context, rep *OrphanReport) (*table.Table, table.OrphanCleanupPlan, error) {
	var (
		lastErr  error
		lastHead *table.Table
	)
	for attempt := 1; attempt <= orphanPlanAttempts; attempt++ {
		tbl, err := p.cat.LoadTable(ctx, p.ident)
		if err != nil {
			return nil, table.OrphanCleanupPlan{}, fmt.Errorf("orphan cleanup: load %s: %w", p.name, err)
		}
		if lastErr != nil && sameHead(tbl, lastHead) {
			return nil, table.OrphanCleanupPlan{}, lastErr // not a race with a writer
		}
		ret, err := retentionOf(tbl.Properties(), p.opts)
		if err != nil {
			return nil, table.OrphanCleanupPlan{}, fmt.Errorf("orphan cleanup of %s: %w", p.name, err)
		}
		rep.Grace = ret.orphanGrace
		plan, err := tbl.PlanOrphanFiles(ctx, table.WithFilesOlderThan(rep.Grace))
		if err == nil {
			return tbl, plan, nil
		}
		lastErr = fmt.Errorf("orphan cleanup of %s: plan: %w", p.name, err)
		lastHead = tbl
	}
	return nil, table.OrphanCleanupPlan{}, lastErr
}

// sameHead reports whether a and b have the same current snapshot.
func sameHead(a, b *table.Table) bool {
	sa, sb := a.CurrentSnapshot(), b.CurrentSnapshot()
	if sa == nil || sb == nil {
		return sa == sb
	}
	return sa.SnapshotID == sb.SnapshotID
}

// keepFile returns the predicate of unreferenced files orphan cleanup must
// keep: an LSM table's changelog, whatever the snapshots of a pinned log
// reference, and the files of expired snapshots Options.Removals holds for
// their grace.
func (p *pass) keepFile(ctx context.Context, tbl *table.Table) (func(string) bool, error) {
	pinned, err := pinnedKeep(ctx, p.opts.Manifests, tbl)
	if err != nil {
		return nil, fmt.Errorf("orphan cleanup of %s: %w", p.name, err)
	}
	keep, err := p.keepChangelog(ctx, tbl)
	if err != nil {
		return nil, err
	}
	held := p.opts.Removals.held()
	if len(pinned) == 0 && len(held) == 0 {
		return keep, nil
	}
	return func(f string) bool { return pinned[pathKey(f)] || held[pathKey(f)] || keep(f) }, nil
}

// keepChangelog returns the predicate of the LSM changelog files orphan
// cleanup must keep.
func (p *pass) keepChangelog(ctx context.Context, tbl *table.Table) (func(string) bool, error) {
	if p.opts.Retention != nil {
		files, err := p.opts.Retention.KeepFiles(ctx, tbl)
		if err != nil {
			return nil, fmt.Errorf("orphan cleanup of %s: retention hook: %w", p.name, err)
		}
		kept := make(map[string]bool, len(files))
		for f, k := range files {
			if k {
				kept[pathKey(f)] = true
			}
		}
		return func(f string) bool { return kept[pathKey(f)] }, nil
	}
	if !changelog.IsLSMTable(tbl.Properties()) {
		return func(string) bool { return false }, nil
	}
	loc := strings.TrimSuffix(pathKey(tbl.Location()), "/") + "/"
	return func(f string) bool {
		rel, ok := strings.CutPrefix(pathKey(f), loc)
		if !ok {
			// Not under the table location as spelled in the metadata:
			// keep it rather than guess.
			return true
		}
		return strings.HasPrefix(rel, lsmChangelogDir) || strings.HasPrefix(rel, lsmChangelogManifest)
	}, nil
}

// pathKey spells a local file the same whether it came from metadata
// (file:///x) or from listing the directory (/x).
func pathKey(p string) string {
	if rest, ok := strings.CutPrefix(p, "file://"); ok {
		return rest
	}
	if rest, ok := strings.CutPrefix(p, "file:"); ok {
		return rest
	}
	return p
}
