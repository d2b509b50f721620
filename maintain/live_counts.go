package maintain

import "github.com/apache/iceberg-go"

// liveFileCounts is how many data and delete files a snapshot's manifests
// list as live, read from its manifest list alone: every v2 writer records
// each manifest's added and existing file counts there. ok is false when a
// manifest does not record them (optional in v1). The counts bound what the
// planner counts (it also drops empty files and delete files that apply to
// no live data file), so counts within the compaction thresholds mean the
// table needs no rewrite, decided without reading a manifest: the pass of a
// table that needs none, the common case, costs one cached manifest list.
func liveFileCounts(mans []iceberg.ManifestFile) (data, deletes int, ok bool) {
	for _, m := range mans {
		added, existing := m.AddedDataFiles(), m.ExistingDataFiles()
		if added < 0 || existing < 0 {
			return 0, 0, false
		}
		if m.ManifestContent() == iceberg.ManifestContentDeletes {
			deletes += int(added + existing)
		} else {
			data += int(added + existing)
		}
	}
	return data, deletes, true
}
