package maintain

import (
	"fmt"
	"slices"
	"strings"

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
	entries *sizedlru.Cache[string, manifestPaths]
}

// NewManifestCache returns a cache of at most about maxBytes, shared
// evenly by manifest lists and manifest entries.
func NewManifestCache(maxBytes int64) *ManifestCache {
	return &ManifestCache{
		lists:   sizedlru.New[string](maxBytes/2, manifestListSize),
		entries: sizedlru.New[string](maxBytes/2, pathsSize),
	}
}

// manifestFileOverhead is what one cached manifest list entry holds
// besides its path: iceberg-go's manifestFile struct (counts, sequence
// numbers, pointers) and the interface and slice slots that hold it.
const manifestFileOverhead = 224

func manifestListSize(mans []iceberg.ManifestFile) int64 {
	n := int64(64)
	for _, m := range mans {
		n += int64(len(m.FilePath())) + manifestFileOverhead
	}
	return n
}

func pathsSize(mp manifestPaths) int64 {
	n := int64(80)
	for _, p := range mp.paths {
		n += int64(len(p)) + 16
	}
	return n
}

// manifests is the manifest list of s.
func (c *ManifestCache) manifests(fsys iceio.IO, s table.Snapshot) ([]iceberg.ManifestFile, error) {
	if mans, ok := c.lists.Get(s.ManifestList); ok {
		return mans, nil
	}
	decoded, err := s.Manifests(fsys)
	if err != nil {
		return nil, fmt.Errorf("manifest list of snapshot %d: %w", s.SnapshotID, err)
	}
	mans := make([]iceberg.ManifestFile, len(decoded))
	for i, m := range decoded {
		mans[i] = detached(m)
	}
	c.lists.Add(s.ManifestList, mans)
	return mans, nil
}

// detached is m with only what reading its entries and counting its files
// needs (liveFileCounts), its path copied out of the decoder's buffer: a
// decoded entry's strings share one
// allocation with everything else the manifest list held (partition
// summaries, bounds), so caching m itself would keep all of that alive
// and make the cache's heap several times what it counts.
func detached(m iceberg.ManifestFile) iceberg.ManifestFile {
	return iceberg.NewManifestFile(m.Version(), strings.Clone(m.FilePath()), m.Length(),
		m.PartitionSpecID(), m.SnapshotID()).
		Content(m.ManifestContent()).
		SequenceNum(m.SequenceNum(), m.MinSequenceNum()).
		AddedFiles(m.AddedDataFiles()).
		ExistingFiles(m.ExistingDataFiles()).
		DeletedFiles(m.DeletedDataFiles()).
		Build()
}

// manifestPaths is what a manifest lists, laid out so that both views a
// pass asks for are sub-slices of one read: paths holds the files of its
// deleted entries, then those of its live ones, then the data files its
// live deletion vectors reference.
type manifestPaths struct {
	paths      []string
	live, refs int
}

// entryPaths is the path of every file m lists; with live, only its live
// entries, plus the data file each deletion vector references (a
// reference to keep, as iceberg-go's orphan scan counts it). Both views
// come from one read of the manifest: a pass reads a manifest's live view
// while a retained snapshot lists it and the whole once it expires, and
// every open of a manifest parses its Avro schema afresh (iceberg-go
// v0.7.0), the largest allocation of a maintenance pass.
func (c *ManifestCache) entryPaths(fsys iceio.IO, m iceberg.ManifestFile, live bool) ([]string, error) {
	mp, ok := c.entries.Get(m.FilePath())
	if !ok {
		var err error
		if mp, err = readManifestPaths(fsys, m); err != nil {
			return nil, err
		}
		c.entries.Add(m.FilePath(), mp)
	}
	// Capped views: the slice is shared with the cache.
	deleted := len(mp.paths) - mp.live - mp.refs
	if live {
		return mp.paths[deleted:len(mp.paths):len(mp.paths)], nil
	}
	return mp.paths[: deleted+mp.live : deleted+mp.live], nil
}

func readManifestPaths(fsys iceio.IO, m iceberg.ManifestFile) (manifestPaths, error) {
	var deleted, live, refs []string
	for entry, err := range m.Entries(fsys, false) {
		if err != nil {
			return manifestPaths{}, fmt.Errorf("manifest %s: %w", m.FilePath(), err)
		}
		// Copied for the same reason as detached's path.
		p := strings.Clone(entry.DataFile().FilePath())
		if entry.Status() == iceberg.EntryStatusDELETED {
			deleted = append(deleted, p)
			continue
		}
		live = append(live, p)
		if ref := entry.DataFile().ReferencedDataFile(); ref != nil {
			refs = append(refs, strings.Clone(*ref))
		}
	}
	return manifestPaths{paths: slices.Concat(deleted, live, refs), live: len(live), refs: len(refs)}, nil
}

// forget drops what the cache holds for files an expiry has made
// unreachable: the manifest list of an expired snapshot and the manifests
// only expired snapshots had are never asked for again, and left in place
// they would fill the cache with dead entries (and the heap the collector
// scans) until evicted.
func (c *ManifestCache) forget(manifestList string, manifests []string) {
	c.lists.Remove(manifestList)
	for _, m := range manifests {
		c.entries.Remove(m)
	}
}
