package maintain

import (
	"context"
	"fmt"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// unreferencedFiles lists the files the expired snapshots of before
// referenced (manifest lists, manifests, data and delete files, statistics)
// that no snapshot of after references. Only live entries of after's
// manifests count as references: a file a retained snapshot records as
// DELETED is live in no retained snapshot.
//
// It reads every manifest of after once (as iceberg-go's own post-commit
// cleanup does) and the manifests only expired snapshots had.
func unreferencedFiles(ctx context.Context, before, after *table.Table, expired []table.Snapshot) ([]string, error) {
	fsys, err := before.FS(ctx)
	if err != nil {
		return nil, fmt.Errorf("file IO: %w", err)
	}
	live := make(map[string]bool)
	liveManifests := make(map[string]bool)
	for _, s := range after.Metadata().Snapshots() {
		live[s.ManifestList] = true
		mans, err := s.Manifests(fsys)
		if err != nil {
			return nil, fmt.Errorf("manifest list of retained snapshot %d: %w", s.SnapshotID, err)
		}
		for _, m := range mans {
			if liveManifests[m.FilePath()] {
				continue
			}
			liveManifests[m.FilePath()] = true
			if err := eachEntryPath(fsys, m, true, func(p string) { live[p] = true }); err != nil {
				return nil, err
			}
		}
	}
	for sf := range after.Metadata().Statistics() {
		live[sf.StatisticsPath] = true
	}
	for psf := range after.Metadata().PartitionStatistics() {
		live[psf.StatisticsPath] = true
	}

	var out []string
	seen := make(map[string]bool)
	add := func(p string) {
		if p != "" && !live[p] && !seen[p] {
			seen[p] = true
			out = append(out, p)
		}
	}
	expiredIDs := make(map[int64]bool, len(expired))
	for _, s := range expired {
		expiredIDs[s.SnapshotID] = true
		add(s.ManifestList)
		mans, err := s.Manifests(fsys)
		if err != nil {
			return nil, fmt.Errorf("manifest list of expired snapshot %d: %w", s.SnapshotID, err)
		}
		for _, m := range mans {
			if liveManifests[m.FilePath()] || seen[m.FilePath()] {
				continue
			}
			add(m.FilePath())
			if err := eachEntryPath(fsys, m, false, add); err != nil {
				return nil, err
			}
		}
	}
	for sf := range before.Metadata().Statistics() {
		if expiredIDs[sf.SnapshotID] {
			add(sf.StatisticsPath)
		}
	}
	for psf := range before.Metadata().PartitionStatistics() {
		if expiredIDs[psf.SnapshotID] {
			add(psf.StatisticsPath)
		}
	}
	return out, nil
}

// eachEntryPath calls fn with the path of every file a manifest lists;
// with live, only live entries, plus the data file each deletion vector
// references (a reference to keep, as iceberg-go's orphan scan counts it).
func eachEntryPath(fsys iceio.IO, m iceberg.ManifestFile, live bool, fn func(string)) error {
	for entry, err := range m.Entries(fsys, live) {
		if err != nil {
			return fmt.Errorf("manifest %s: %w", m.FilePath(), err)
		}
		fn(entry.DataFile().FilePath())
		if ref := entry.DataFile().ReferencedDataFile(); live && ref != nil {
			fn(*ref)
		}
	}
	return nil
}
