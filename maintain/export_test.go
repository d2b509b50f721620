package maintain

import (
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// For the external tests, which need quickstart (which imports maintain).

func (c *ManifestCache) Manifests(fsys iceio.IO, s table.Snapshot) ([]iceberg.ManifestFile, error) {
	return c.manifests(fsys, s)
}

func (c *ManifestCache) EntryPaths(fsys iceio.IO, m iceberg.ManifestFile, live bool) ([]string, error) {
	return c.entryPaths(fsys, m, live)
}

// Lists is the number of manifest lists the cache holds.
func (c *ManifestCache) Lists() int { return c.lists.Len() }

// LiveFileCounts and PlannedFileCounts are the manifest list's live file
// counts and the planner's, for TestLiveFileCountsBoundThePlanners.
func LiveFileCounts(mans []iceberg.ManifestFile) (data, deletes int, ok bool) {
	return liveFileCounts(mans)
}

func PlannedFileCounts(tasks []table.FileScanTask) (data, deletes int) {
	data, deletes, _ = countFiles(tasks)
	return data, deletes
}
