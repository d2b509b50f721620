package maintain

import (
	"fmt"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/internal/sizedlru"
)

// DefaultManifestCacheBytes bounds the ManifestCache serve keeps for all
// the tables it maintains.
const DefaultManifestCacheBytes = 64 << 20

// ManifestCache remembers what manifest lists and manifests say. Both are
// immutable files, named once and never rewritten, so what one pass read
// holds for every later pass. Snapshot expiry must know every file the
// retained snapshots reference: without the cache, each pass of a
// streaming table reads the manifest list of every retained snapshot and
// every manifest they share, work that grows with the retained history
// and repeats every interval; with it, a pass reads only the files
// committed since the last one. Safe for concurrent use.
type ManifestCache struct {
	lists   *sizedlru.Cache[string, []iceberg.ManifestFile]
	entries *sizedlru.Cache[entriesKey, []string]
}

type entriesKey struct {
	manifest string
	live     bool
}

// NewManifestCache returns a cache of at most about maxBytes, shared
// evenly by manifest lists and manifest entries.
func NewManifestCache(maxBytes int64) *ManifestCache {
	return &ManifestCache{
		lists:   sizedlru.New[string](maxBytes/2, manifestListSize),
		entries: sizedlru.New[entriesKey](maxBytes/2, pathsSize),
	}
}

// manifestFileOverhead is about what one decoded manifest list entry
// holds besides its path (counts, sequence numbers, partition summaries).
const manifestFileOverhead = 256

func manifestListSize(mans []iceberg.ManifestFile) int64 {
	n := int64(64)
	for _, m := range mans {
		n += int64(len(m.FilePath())) + manifestFileOverhead
	}
	return n
}

func pathsSize(paths []string) int64 {
	n := int64(64)
	for _, p := range paths {
		n += int64(len(p)) + 16
	}
	return n
}

// manifests is the manifest list of s.
func (c *ManifestCache) manifests(fsys iceio.IO, s table.Snapshot) ([]iceberg.ManifestFile, error) {
	if mans, ok := c.lists.Get(s.ManifestList); ok {
		return mans, nil
	}
	mans, err := s.Manifests(fsys)
	if err != nil {
		return nil, fmt.Errorf("manifest list of snapshot %d: %w", s.SnapshotID, err)
	}
	c.lists.Add(s.ManifestList, mans)
	return mans, nil
}

// entryPaths is the path of every file m lists; with live, only its live
// entries, plus the data file each deletion vector references (a
// reference to keep, as iceberg-go's orphan scan counts it).
func (c *ManifestCache) entryPaths(fsys iceio.IO, m iceberg.ManifestFile, live bool) ([]string, error) {
	k := entriesKey{manifest: m.FilePath(), live: live}
	if paths, ok := c.entries.Get(k); ok {
		return paths, nil
	}
	var paths []string
	for entry, err := range m.Entries(fsys, live) {
		if err != nil {
			return nil, fmt.Errorf("manifest %s: %w", m.FilePath(), err)
		}
		paths = append(paths, entry.DataFile().FilePath())
		if ref := entry.DataFile().ReferencedDataFile(); live && ref != nil {
			paths = append(paths, *ref)
		}
	}
	c.entries.Add(k, paths)
	return paths, nil
}
