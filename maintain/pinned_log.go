package maintain

import (
	"context"
	"fmt"
	"strings"
	"time"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/lakegw/lakegw/changelog"
)

// A pin on a table lakegw maintains that is not an LSM table is held by a
// pinned log (changelog.PinnedLog), not by snapshots left in the table:
// the snapshots expire by the table's own retention, and those a committed
// group offset still needs are listed in the log, their files kept. The
// metadata file every commit rewrites then stays the size of the table's
// own retention however long a consumer is away (an LSM table's pins hold
// its changelog instead; format v1 tables, whose topic numbers snapshots
// by their place in the history, keep the snapshots themselves).

// logsPins reports whether the pins of tbl are held by a pinned log.
func (p *pass) logsPins(tbl *table.Table) bool {
	return p.opts.Pin != nil && !changelog.IsLSMTable(tbl.Properties()) && tbl.Metadata().Version() >= 2
}

// snapshotHold is what a consumer's pin asks of a table with a pinned log:
// the commit time (ms) from which its snapshots must stay readable, cut at
// lakegw.consumer.max-pin (0: nothing pinned).
func (p *pass) snapshotHold(ctx context.Context, ret retention, now time.Time) (PinReport, int64) {
	return p.hold(ctx, ret, now, HeldByPinnedLog)
}

// pinnedChange is what an expiry does to the pinned log.
type pinnedChange struct {
	old, next *changelog.PinnedLog
	// oldPath names old ("" when there was none); nextPath the file next
	// was written to ("" when next is empty, or not written yet).
	oldPath, nextPath string
	// gone are the snapshots that leave both the table and the log: the
	// files only they referenced go.
	gone []table.Snapshot
}

// logged are the snapshots the next log holds.
func (c pinnedChange) logged() []table.Snapshot {
	if c.next == nil {
		return nil
	}
	return c.next.Snapshots
}

// goneOf is what leaves the table and the log with an expiry of expired:
// all of it when the table has no pinned log.
func (c pinnedChange) goneOf(expired []table.Snapshot) []table.Snapshot {
	if c.old == nil {
		return expired
	}
	return c.gone
}

// changed reports whether the log must be rewritten.
func (c pinnedChange) changed() bool {
	if c.old.Len() != c.next.Len() {
		return true
	}
	if c.next.Len() == 0 {
		return false
	}
	for i := range c.next.Snapshots {
		if c.old.Snapshots[i].SnapshotID != c.next.Snapshots[i].SnapshotID {
			return true
		}
	}
	return false
}

// nextPinnedLog works out the pinned log after an expiry staged on tbl:
// walking back from the parent of the main branch's oldest retained
// snapshot through the expiring and the logged snapshots, the chain of
// those committed at or after holdFromMs and the parent of the oldest of
// them, at most maxSnapshots in all. Every other expiring or logged
// snapshot is gone.
func nextPinnedLog(ctx context.Context, tbl *table.Table, staged table.Metadata, expired []table.Snapshot,
	holdFromMs int64, maxSnapshots int) (c pinnedChange, capped bool, err error) {
	c = pinnedChange{old: &changelog.PinnedLog{}, next: &changelog.PinnedLog{}, oldPath: tbl.Properties()[changelog.PropPinnedLog]}
	if c.oldPath != "" {
		fsys, err := tbl.FS(ctx)
		if err != nil {
			return c, false, fmt.Errorf("file IO: %w", err)
		}
		if c.old, err = changelog.ReadPinnedLog(fsys, c.oldPath); err != nil {
			return c, false, err
		}
	}
	byID := make(map[int64]table.Snapshot, c.old.Len()+len(expired))
	for _, s := range c.old.Snapshots {
		if staged.SnapshotByID(s.SnapshotID) == nil {
			byID[s.SnapshotID] = s
		}
	}
	for _, s := range expired {
		byID[s.SnapshotID] = s
	}
	main, err := changelog.MainHistory(staged)
	if err != nil {
		return c, false, fmt.Errorf("main branch history: %w", err)
	}
	if holdFromMs > 0 && len(main) > 0 {
		var chain []table.Snapshot
		// A snapshot's changes are derived against its parent: the parent
		// of the oldest pinned snapshot is logged too (the topic's
		// compacted prefix then holds its live rows, and the pinned one
		// keeps its changes at their offsets).
		for cur := staged.SnapshotByID(main[0].SnapshotID); cur.TimestampMs >= holdFromMs && cur.ParentSnapshotID != nil; {
			s, ok := byID[*cur.ParentSnapshotID]
			if !ok {
				break
			}
			if len(chain) == max(maxSnapshots, 1) {
				capped = true
				break
			}
			chain = append(chain, s)
			cur = &s
		}
		for i := len(chain) - 1; i >= 0; i-- {
			c.next.Snapshots = append(c.next.Snapshots, chain[i])
		}
	}
	kept := make(map[int64]bool, c.next.Len())
	for _, s := range c.next.Snapshots {
		kept[s.SnapshotID] = true
	}
	for _, s := range c.old.Snapshots {
		if !kept[s.SnapshotID] && staged.SnapshotByID(s.SnapshotID) == nil {
			c.gone = append(c.gone, s)
			kept[s.SnapshotID] = true // once, should it also be expiring
		}
	}
	for _, s := range expired {
		if !kept[s.SnapshotID] {
			c.gone = append(c.gone, s)
		}
	}
	return c, capped, nil
}

// stage writes the next log (when it changed and is not empty) and names
// it, or unnames an emptied one, in tx.
func (c *pinnedChange) stage(ctx context.Context, tbl *table.Table, tx *table.Transaction) error {
	if !c.changed() {
		return nil
	}
	if c.next.Len() == 0 {
		if err := tx.RemoveProperties([]string{changelog.PropPinnedLog}); err != nil {
			return fmt.Errorf("unname the pinned log: %w", err)
		}
		return nil
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return fmt.Errorf("file IO: %w", err)
	}
	wfs, ok := fsys.(icebergio.WriteFileIO)
	if !ok {
		return fmt.Errorf("file IO %T cannot write", fsys)
	}
	body, err := changelog.EncodePinnedLog(*c.next)
	if err != nil {
		return err
	}
	p := pinnedLogPath(tbl.Location())
	if err := wfs.WriteFile(p, body); err != nil {
		return fmt.Errorf("write pinned log %s: %w", p, err)
	}
	c.nextPath = p
	if err := tx.SetProperties(map[string]string{changelog.PropPinnedLog: p}); err != nil {
		return fmt.Errorf("name the pinned log: %w", err)
	}
	return nil
}

// pinnedLogPrefix starts the names of pinned log files in metadata/: one
// no commit names (its pass lost every race) is an orphan like any other.
const pinnedLogPrefix = "lakegw-pinned-"

func pinnedLogPath(location string) string {
	return strings.TrimSuffix(location, "/") + "/metadata/" + pinnedLogPrefix + uuid.NewString() + ".json"
}

// pinnedKeep returns the files the pinned log tbl names keeps (its
// snapshots' manifest lists, manifests and live data and delete files,
// and the log itself): orphan cleanup must keep them, since the table's
// metadata no longer references them.
func pinnedKeep(ctx context.Context, cache *ManifestCache, tbl *table.Table) (map[string]bool, error) {
	p := tbl.Properties()[changelog.PropPinnedLog]
	if p == "" {
		return nil, nil
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return nil, fmt.Errorf("file IO: %w", err)
	}
	l, err := changelog.ReadPinnedLog(fsys, p)
	if err != nil {
		return nil, err
	}
	keep := map[string]bool{pathKey(p): true}
	for _, s := range l.Snapshots {
		keep[pathKey(s.ManifestList)] = true
		mans, err := cache.manifests(fsys, s)
		if err != nil {
			return nil, fmt.Errorf("pinned snapshot: %w", err)
		}
		for _, m := range mans {
			keep[pathKey(m.FilePath())] = true
			paths, err := cache.entryPaths(fsys, m, true)
			if err != nil {
				return nil, err
			}
			for _, f := range paths {
				keep[pathKey(f)] = true
			}
		}
	}
	return keep, nil
}
