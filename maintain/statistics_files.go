package maintain

import "github.com/apache/iceberg-go/table"

// statisticsPaths are the statistics and partition statistics files meta
// lists for the snapshots of reports true: what goes with those snapshots
// when they expire, or (of every snapshot) what stays live.
func statisticsPaths(meta table.Metadata, of func(snapshotID int64) bool) []string {
	var out []string
	for sf := range meta.Statistics() {
		if sf.StatisticsPath != "" && of(sf.SnapshotID) {
			out = append(out, sf.StatisticsPath)
		}
	}
	for psf := range meta.PartitionStatistics() {
		if psf.StatisticsPath != "" && of(psf.SnapshotID) {
			out = append(out, psf.StatisticsPath)
		}
	}
	return out
}

// anySnapshot selects the statistics of every snapshot.
func anySnapshot(int64) bool { return true }

// inSet selects the statistics of the snapshots in ids.
func inSet(ids map[int64]bool) func(int64) bool {
	return func(id int64) bool { return ids[id] }
}
