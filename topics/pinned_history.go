package topics

import (
	"context"
	"fmt"

	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/changelog"
)

// refreshPinned reads the pinned log a table names (changelog.PinnedLog:
// snapshots expired from the table that a consumer's pin still holds) when
// it changed, and stores on the topic a view of the table holding them
// before the caller publishes tbl, so that a fetch that sees the new
// metadata still finds the snapshots that left it. A new log comes with
// an expiry, a few times an hour: the view's cost (one pass over the
// metadata JSON) is paid then, not at every commit.
func (w *watcher) refreshPinned(ctx context.Context, tbl *table.Table) error {
	path := tbl.Properties()[changelog.PropPinnedLog]
	if changelog.IsLSMTable(tbl.Properties()) {
		path = "" // an LSM table's history is its changelog log's
	}
	if path == w.pinnedPath {
		return nil
	}
	var (
		log  *changelog.PinnedLog
		view *table.Table
	)
	if path != "" {
		fs, err := tbl.FS(ctx)
		if err != nil {
			return fmt.Errorf("file IO: %w", err)
		}
		if log, err = changelog.ReadPinnedLog(fs, path); err != nil {
			return err
		}
		if view, err = changelog.WithPinned(tbl, log); err != nil {
			return err
		}
	}
	w.pinnedPath, w.pinnedLog = path, log
	w.pinnedIDs = make(map[int64]bool, log.Len())
	for _, s := range w.logged() {
		w.pinnedIDs[s.SnapshotID] = true
	}
	if old := w.topic.pinned.Swap(view); old != view {
		w.topic.prevPinned.Store(old)
	}
	w.log.Debug().Str("pinned_log", path).Int("snapshots", log.Len()).Msg("pinned log loaded")
	return nil
}

// logged are the snapshots of the pinned log.
func (w *watcher) logged() []table.Snapshot {
	if w.pinnedLog == nil {
		return nil
	}
	return w.pinnedLog.Snapshots
}

// pinnedHistory returns the topic's history of a table that is not an LSM
// table: its pinned snapshots, if any, then the main branch.
func (w *watcher) pinnedHistory(tbl *table.Table) ([]changelog.SnapshotRef, error) {
	if w.pinnedLog.Len() == 0 {
		return changelog.MainHistory(tbl.Metadata())
	}
	hist, ok, err := changelog.PinnedHistory(tbl.Metadata(), w.pinnedLog)
	if err == nil && !ok {
		w.log.Warn().Str("pinned_log", w.pinnedPath).
			Msg("the pinned log does not lead into the table's main branch (expired or rolled back by another writer?): the topic starts at the main branch")
	}
	return hist, err
}

// holdsSnapshot reports whether tbl or the pinned log holds snapshot id.
func (w *watcher) holdsSnapshot(tbl *table.Table, id int64) bool {
	return tbl.Metadata().SnapshotByID(id) != nil || w.pinnedIDs[id]
}

// readable returns a table state to derive snapshot id from: tbl when it
// holds the snapshot and its parent, else the view holding the pinned
// snapshots when it does (a pinned snapshot, or the oldest retained one,
// whose parent is pinned).
func (w *watcher) readable(tbl *table.Table, id int64) *table.Table {
	if holdsWithParent(tbl, id) {
		return tbl
	}
	if view := w.topic.pinned.Load(); view != nil && view.Metadata().SnapshotByID(id) != nil {
		return view
	}
	return tbl
}

// holdsWithParent reports whether tbl holds snapshot id and its parent,
// what deriving its changes reads (a first snapshot has none).
func holdsWithParent(tbl *table.Table, id int64) bool {
	s := tbl.Metadata().SnapshotByID(id)
	return s != nil && (s.ParentSnapshotID == nil || tbl.Metadata().SnapshotByID(*s.ParentSnapshotID) != nil)
}
