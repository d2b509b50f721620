package derive

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	icefiles "github.com/lakegw/lakegw/lake/files"
)

// snapshotDelta is what one snapshot changed in the table's file set: the
// manifest entries it added and removed, by content. Iceberg records a
// removal as a DELETED entry in a manifest written by the removing snapshot,
// so the delta is read from that snapshot's own manifests only.
type snapshotDelta struct {
	addedData      []iceberg.ManifestEntry
	removedData    []iceberg.ManifestEntry
	addedDeletes   []iceberg.ManifestEntry
	removedDeletes []iceberg.ManifestEntry
}

// pureAppend reports whether the snapshot only added data files.
func (d *snapshotDelta) pureAppend() bool {
	return len(d.removedData) == 0 && len(d.addedDeletes) == 0 && len(d.removedDeletes) == 0
}

// readManifestList returns the manifests of a snapshot, naming the manifest
// list in the error (a damaged table must say which file is missing).
func readManifestList(fs icebergio.IO, snap *table.Snapshot) ([]iceberg.ManifestFile, error) {
	if err := hasManifestList(snap); err != nil {
		return nil, err
	}
	manifests, err := snap.Manifests(fs)
	if err != nil {
		return nil, fmt.Errorf("read manifest list %s of snapshot %d: %w", snap.ManifestList, snap.SnapshotID, err)
	}
	return manifests, nil
}

// hasManifestList refuses a snapshot that names neither a manifest list nor
// manifests: iceberg-go reads it as a snapshot of no files (nil, nil), so
// its changes would be indexed as none, forever, and its live rows as an
// empty table. Every snapshot of a valid table names one (an empty table's
// names an empty list).
func hasManifestList(snap *table.Snapshot) error {
	if snap.ManifestList == "" && len(snap.ManifestLocations) == 0 {
		return fmt.Errorf("snapshot %d names no manifest list: its metadata is damaged", snap.SnapshotID)
	}
	return nil
}

// readManifest returns the entries of one manifest (deleted entries kept),
// naming the manifest in the error.
func readManifest(fs icebergio.IO, m iceberg.ManifestFile) ([]iceberg.ManifestEntry, error) {
	return icefiles.ManifestEntries(fs, m, false)
}

// readDelta collects the entries that snapshot snap added or removed, each
// list sorted by file path so that event order is deterministic.
func readDelta(fs icebergio.IO, snap *table.Snapshot, manifests []iceberg.ManifestFile) (*snapshotDelta, error) {
	d := &snapshotDelta{}
	for _, m := range manifests {
		// Entries added or removed by a snapshot only live in manifests
		// that snapshot wrote; a manifest list without the field (-1) is
		// read to be safe.
		if m.SnapshotID() != snap.SnapshotID && m.SnapshotID() >= 0 {
			continue
		}
		entries, err := readManifest(fs, m)
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			if e.SnapshotID() != snap.SnapshotID {
				continue
			}
			isData := e.DataFile().ContentType() == iceberg.EntryContentData
			switch e.Status() {
			case iceberg.EntryStatusADDED:
				if isData {
					d.addedData = append(d.addedData, e)
				} else {
					d.addedDeletes = append(d.addedDeletes, e)
				}
			case iceberg.EntryStatusDELETED:
				if isData {
					d.removedData = append(d.removedData, e)
				} else {
					d.removedDeletes = append(d.removedDeletes, e)
				}
			}
		}
	}
	for _, list := range [][]iceberg.ManifestEntry{d.addedData, d.removedData, d.addedDeletes, d.removedDeletes} {
		sortEntries(list)
	}
	return d, nil
}

func sortEntries(list []iceberg.ManifestEntry) {
	slices.SortStableFunc(list, func(a, b iceberg.ManifestEntry) int {
		return cmp.Compare(a.DataFile().FilePath(), b.DataFile().FilePath())
	})
}
