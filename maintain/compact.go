package maintain

import (
	"context"
	"fmt"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/changelog"
)

// SummaryMaintenance is the snapshot summary key naming the maintenance
// step that committed a snapshot ("compaction", "manifests").
const SummaryMaintenance = "lakegw.maintenance"

// compact rewrites the live rows of a merge-on-read table into few data
// files, applying its position deletes and dropping them, once its data or
// delete files pass the thresholds. The result is a `replace` snapshot:
// the rows are the same, so the gateway derives no change events from it.
//
// A lakegw LSM table is compacted by lsm/ (its runs and changelog files
// follow the LSM layout), and a partitioned table is left alone: the demo
// and the tables lakegw writes are unpartitioned, and one group per
// partition is work for when a partitioned writer exists.
func (p *pass) compact(ctx context.Context, rep *CompactionReport) error {
	if p.opts.CompactDataFiles < 0 {
		rep.Skipped = "turned off"
		return nil
	}
	_, committed, err := p.commitStep(ctx, "compaction", func(ctx context.Context, tbl *table.Table, tx *table.Transaction) (bool, error) {
		*rep = CompactionReport{}
		switch {
		case changelog.IsLSMTable(tbl.Properties()):
			rep.Skipped = "lakegw LSM table: lsm compacts it"
			return false, nil
		case tbl.CurrentSnapshot() == nil:
			rep.Skipped = "no snapshot"
			return false, nil
		case !tbl.Spec().IsUnpartitioned():
			rep.Skipped = "partitioned table"
			return false, nil
		}
		tasks, err := tbl.Scan().PlanFiles(ctx)
		if err != nil {
			return false, fmt.Errorf("plan files: %w", err)
		}
		var size int64
		rep.DataFilesBefore, rep.DeleteFilesBefore, size = countFiles(tasks)
		if rep.DataFilesBefore <= p.opts.CompactDataFiles && rep.DeleteFilesBefore <= p.opts.CompactDeleteFiles {
			rep.Skipped = fmt.Sprintf("%d data and %d delete files, thresholds %d and %d",
				rep.DataFilesBefore, rep.DeleteFilesBefore, p.opts.CompactDataFiles, p.opts.CompactDeleteFiles)
			return false, nil
		}
		if p.opts.DryRun {
			rep.DataFilesRewritten = rep.DataFilesBefore
			rep.DeleteFilesRemoved = rep.DeleteFilesBefore
			return true, nil
		}
		group := table.CompactionTaskGroup{Tasks: tasks, TotalSizeBytes: size}
		res, err := tx.RewriteDataFiles(ctx, []table.CompactionTaskGroup{group}, table.RewriteDataFilesOptions{
			SnapshotProps: iceberg.Properties{SummaryMaintenance: "compaction"},
		})
		if err != nil {
			return false, fmt.Errorf("rewrite data files: %w", err)
		}
		rep.DataFilesRewritten = res.RemovedDataFiles
		rep.DataFilesAdded = res.AddedDataFiles
		rep.DeleteFilesRemoved = res.RemovedPositionDeleteFiles + res.RemovedDeletionVectorFiles + res.RemovedEqualityDeleteFiles
		return res.RewrittenGroups > 0, nil
	})
	if err != nil {
		return err
	}
	if committed != nil {
		if snap := committed.CurrentSnapshot(); snap != nil {
			rep.SnapshotID = snap.SnapshotID
		}
		p.log.Info().Int("data_files", rep.DataFilesRewritten).Int("into", rep.DataFilesAdded).
			Int("delete_files", rep.DeleteFilesRemoved).Msg("compacted small files")
	}
	return nil
}

// countFiles counts the distinct data and delete files of planned tasks,
// and the bytes of the data files.
func countFiles(tasks []table.FileScanTask) (data, deletes int, size int64) {
	seenData := make(map[string]bool, len(tasks))
	seenDel := make(map[string]bool)
	for _, t := range tasks {
		if p := t.File.FilePath(); !seenData[p] {
			seenData[p] = true
			size += t.File.FileSizeBytes()
		}
		for _, d := range t.DeleteFiles {
			seenDel[d.FilePath()] = true
		}
		for _, d := range t.EqualityDeleteFiles {
			seenDel[d.FilePath()] = true
		}
		for _, d := range t.DeletionVectorFiles {
			seenDel[d.FilePath()] = true
		}
	}
	return len(seenData), len(seenDel), size
}
