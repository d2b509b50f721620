package lake

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/apache/iceberg-go/table"
)

// IsCommitConflict reports whether a commit failed because the table moved
// and nothing of it was applied. The SQL catalog reports a stale branch as
// a plain requirement error ("requirement failed: branch main has changed",
// or for a table's first snapshot "... created concurrently"), not wrapped
// in table.ErrCommitFailed, so the text is matched too.
func IsCommitConflict(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, table.ErrCommitFailed) {
		return true
	}
	msg := strings.ToLower(err.Error())
	return strings.Contains(msg, "requirement failed") && (strings.Contains(msg, "has changed") || strings.Contains(msg, "concurrently"))
}

// CommitOrClean commits tx, staged on base. When the catalog refuses it for
// a conflict, the manifest list and manifests staged for its snapshot are
// removed at once: nothing will ever reference them. Left to orphan cleanup
// (an hourly pass, files past a grace period of at least ten minutes), a
// streaming table's writers racing its maintenance left a manifest list
// and its manifests every few seconds (a 4,000-commit soak: 261 of the 361
// manifest lists of its primary-key table, 97 of the demo's 197). Only a
// clean conflict proves the catalog did not take the snapshot; after any
// other failure the files may be live and stay. A failure to remove them
// is joined to the conflict, which stays recognisable as one.
func CommitOrClean(ctx context.Context, base *table.Table, tx *table.Transaction) (*table.Table, error) {
	committed, err := tx.Commit(ctx)
	if err == nil || !IsCommitConflict(err) {
		return committed, err
	}
	// The transaction still knows what it staged after a failed commit.
	if cerr := removeStaged(ctx, base, tx); cerr != nil {
		return nil, fmt.Errorf("%w (removing its staged metadata files: %v)", err, cerr)
	}
	return nil, err
}

// removeStaged removes the manifest list and the manifests of the
// snapshot tx stages that base's current snapshot does not reference.
func removeStaged(ctx context.Context, base *table.Table, tx *table.Transaction) error {
	files, err := stagedMetadataFiles(ctx, base, tx)
	if err != nil {
		return err
	}
	_, err = RemoveFiles(ctx, base, files)
	return err
}

// stagedMetadataFiles lists the manifest list and manifests of the
// snapshot tx stages that base's current snapshot does not reference
// (none when tx stages no new snapshot).
func stagedMetadataFiles(ctx context.Context, base *table.Table, tx *table.Transaction) ([]string, error) {
	staged, err := tx.StagedTable()
	if err != nil {
		return nil, fmt.Errorf("staged table: %w", err)
	}
	snap := staged.CurrentSnapshot()
	if snap == nil || (base.CurrentSnapshot() != nil && snap.SnapshotID == base.CurrentSnapshot().SnapshotID) {
		return nil, nil
	}
	fsys, err := base.FS(ctx)
	if err != nil {
		return nil, fmt.Errorf("file IO: %w", err)
	}
	known := make(map[string]bool)
	if cur := base.CurrentSnapshot(); cur != nil {
		mans, err := cur.Manifests(fsys)
		if err != nil {
			return nil, fmt.Errorf("manifest list of snapshot %d: %w", cur.SnapshotID, err)
		}
		for _, m := range mans {
			known[m.FilePath()] = true
		}
	}
	mans, err := snap.Manifests(fsys)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil // already removed (by iceberg-go's own cleanup)
	}
	if err != nil {
		return nil, fmt.Errorf("staged manifest list %s: %w", snap.ManifestList, err)
	}
	out := []string{snap.ManifestList}
	for _, m := range mans {
		if !known[m.FilePath()] {
			out = append(out, m.FilePath())
		}
	}
	return out, nil
}
