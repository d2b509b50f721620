package maintain

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/changelog"
)

// HistoryCap is the snapshot expiry a writer stages in its own commits to
// a table it commits to several times a second (a raw topic's). Iceberg
// rewrites every retained snapshot into each commit's metadata (and
// iceberg-go clones them all per commit), so between two maintenance
// passes a minute of such commits made each commit several times slower
// (a 10-million-record produce ran at 60 % of a short one's rate). Expiring
// in the commit itself keeps the history, and so the cost of a commit,
// bounded by Keep whatever the commit rate.
//
// It is only for tables whose records stay readable without their
// snapshots (read by offset from live files) and that have no pinned log:
// the pass keeps the snapshots consumers pin, a writer does not know them.
type HistoryCap struct {
	// Keep is the most snapshots of main's history a commit leaves (at
	// least 2: the new one and the one it was made on).
	Keep int
	// MaxAge expires snapshots older than it even when fewer than Keep.
	MaxAge time.Duration
	// Manifests caches the manifest lists and entries Clean reads.
	Manifests *ManifestCache
	// Removals, when set, holds the files Clean finds unreferenced for
	// its grace period before they are removed; nil removes them at once.
	Removals *DeferredRemovals
}

// Stage adds to tx, which already holds the writer's new snapshot on base's
// head, the expiry of main's snapshots past the newest Keep or older than
// MaxAge. It stages nothing when there is nothing to expire, and on a
// table with a pinned log (the pass lets that go first).
func (c HistoryCap) Stage(tx *table.Transaction, base *table.Table) error {
	head := base.CurrentSnapshot()
	if head == nil || base.Properties()[changelog.PropPinnedLog] != "" {
		return nil
	}
	keep := max(c.Keep, 2)
	meta := base.Metadata()
	ancestors := table.AncestorsOf(head.SnapshotID, meta.SnapshotByID)
	nowMs := time.Now().UnixMilli()
	maxAgeMs := c.MaxAge.Milliseconds()
	// ancestors[keep-2] is the oldest base snapshot kept beside the new
	// one by count; the next is the first to go.
	olderThanMs := maxAgeMs
	if len(ancestors) >= keep {
		// Its age when Stage reads the clock, less a millisecond: older
		// still when ExpireSnapshots reads it, so it goes; a snapshot of
		// the same millisecond as the newest kept one may go too.
		olderThanMs = min(olderThanMs, nowMs-ancestors[keep-1].TimestampMs-1)
	} else if nowMs-ancestors[len(ancestors)-1].TimestampMs <= maxAgeMs {
		return nil
	}
	olderThanMs = max(olderThanMs, 0)
	if err := tx.ExpireSnapshots(table.WithOlderThan(time.Duration(olderThanMs)*time.Millisecond),
		table.WithRetainLast(2), table.WithPostCommit(false)); err != nil {
		return fmt.Errorf("expire snapshots in the commit: %w", err)
	}
	return nil
}

// Clean removes the files only the snapshots the commit from before to
// after expired referenced (their manifest lists, and the manifests and
// data files a compaction or manifest merge had replaced), after
// c.Removals' grace when set, returning how many it removed.
func (c HistoryCap) Clean(ctx context.Context, before, after *table.Table) (int, error) {
	expired := expiredSnapshots(before, after)
	if len(expired) == 0 {
		return c.remove(ctx, after, nil)
	}
	files, ok, err := onlyManifestLists(ctx, c.Manifests, before, after, expired)
	if err != nil {
		return 0, fmt.Errorf("files of %d snapshots expired in a commit: %w", len(expired), err)
	}
	if !ok {
		if files, err = unreferencedFiles(ctx, c.Manifests, before, after, nil, expired); err != nil {
			return 0, fmt.Errorf("files of %d snapshots expired in a commit: %w", len(expired), err)
		}
	}
	return c.remove(ctx, after, files)
}

// remove removes files now, or after c.Removals' grace.
func (c HistoryCap) remove(ctx context.Context, tbl *table.Table, files []string) (int, error) {
	n, err := c.Removals.remove(ctx, tbl, files)
	if err != nil {
		return n, fmt.Errorf("remove files of snapshots expired in a commit: %w", err)
	}
	return n, nil
}

// onlyManifestLists is the files of expired when every manifest of theirs
// is still in the oldest snapshot after keeps: their manifest lists (and
// any statistics) are then all they leave behind, known without reading the
// entries of every manifest retained (a manifest, once dropped by a merge
// or a compaction, is never added again, so "still in the oldest" is "still
// in any"). ok is false when a merge or a compaction dropped one of their
// manifests since: Clean then reads what the retained snapshots reference.
func onlyManifestLists(ctx context.Context, cache *ManifestCache, before, after *table.Table, expired []table.Snapshot) (files []string, ok bool, err error) {
	oldest := oldestAncestor(after)
	if oldest == nil {
		return nil, false, nil
	}
	fsys, err := before.FS(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("file IO: %w", err)
	}
	kept, err := cache.manifests(fsys, *oldest)
	if err != nil {
		return nil, false, err
	}
	keep := make(map[string]bool, len(kept))
	for _, m := range kept {
		keep[m.FilePath()] = true
	}
	ids := make(map[int64]bool, len(expired))
	for _, s := range expired {
		mans, err := cache.manifests(fsys, s)
		if err != nil {
			return nil, false, err
		}
		for _, m := range mans {
			if !keep[m.FilePath()] {
				return nil, false, nil
			}
		}
		// Read once: the list is about to be removed.
		cache.forget(s.ManifestList, nil)
		ids[s.SnapshotID] = true
		files = append(files, s.ManifestList)
	}
	return append(files, statisticsPaths(before.Metadata(), inSet(ids))...), true, nil
}

// oldestAncestor is the oldest snapshot of tbl's main history it still has.
func oldestAncestor(tbl *table.Table) *table.Snapshot {
	head := tbl.CurrentSnapshot()
	if head == nil {
		return nil
	}
	ancestors := table.AncestorsOf(head.SnapshotID, tbl.Metadata().SnapshotByID)
	if len(ancestors) == 0 {
		return head
	}
	return &ancestors[len(ancestors)-1]
}
