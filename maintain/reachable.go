package maintain

import (
	"context"
	"fmt"
	"slices"

	"github.com/apache/iceberg-go/table"
)

// unreferencedFiles lists the files the expired snapshots of before
// referenced (manifest lists, manifests, data and delete files, statistics)
// that no snapshot of after, nor a pinned one (expired from the table but
// listed in its pinned log), references. Only live entries of after's
// manifests count as references: a file a retained snapshot records as
// DELETED is live in no retained snapshot.
//
// It needs every manifest of after (as iceberg-go's own post-commit
// cleanup does) and the manifests only expired snapshots had; cache says
// what those it read before hold, so a pass reads only what is new.
func unreferencedFiles(ctx context.Context, cache *ManifestCache, before, after *table.Table, pinned, expired []table.Snapshot) ([]string, error) {
	fsys, err := before.FS(ctx)
	if err != nil {
		return nil, fmt.Errorf("file IO: %w", err)
	}
	live := make(map[string]bool)
	liveManifests := make(map[string]bool)
	for _, s := range append(slices.Clone(after.Metadata().Snapshots()), pinned...) {
		live[s.ManifestList] = true
		mans, err := cache.manifests(fsys, s)
		if err != nil {
			return nil, fmt.Errorf("retained snapshot: %w", err)
		}
		for _, m := range mans {
			if liveManifests[m.FilePath()] {
				continue
			}
			liveManifests[m.FilePath()] = true
			paths, err := cache.entryPaths(fsys, m, true)
			if err != nil {
				return nil, err
			}
			for _, p := range paths {
				live[p] = true
			}
		}
	}
	for _, p := range statisticsPaths(after.Metadata(), anySnapshot) {
		live[p] = true
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
		mans, err := cache.manifests(fsys, s)
		if err != nil {
			return nil, fmt.Errorf("expired snapshot: %w", err)
		}
		var dead []string
		for _, m := range mans {
			if liveManifests[m.FilePath()] || seen[m.FilePath()] {
				continue
			}
			add(m.FilePath())
			dead = append(dead, m.FilePath())
			paths, err := cache.entryPaths(fsys, m, false)
			if err != nil {
				return nil, err
			}
			for _, p := range paths {
				add(p)
			}
		}
		cache.forget(s.ManifestList, dead)
	}
	for _, p := range statisticsPaths(before.Metadata(), inSet(expiredIDs)) {
		add(p)
	}
	return out, nil
}
