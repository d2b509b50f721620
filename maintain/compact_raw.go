package maintain

import (
	"context"
	"encoding/binary"
	"fmt"
	"sort"
	"strconv"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/changelog"
	"github.com/lakegw/lakegw/lake"
)

// rawSmallFile is the size under which a raw topic's data file is merged
// with its neighbours, and rawTargetFile the size a merge aims at.
const (
	rawSmallFile  = 32 << 20
	rawTargetFile = 128 << 20
)

// rawRunFiles bounds the files of one partition merged by a pass, and
// rawPassBytes the input of a pass over all partitions (one run is taken
// whatever its size). A raw topic under load adds a file per partition per
// commit, 600 a minute at the default interval: a pass merges at least
// that many, or the files pile up between passes.
const (
	rawRunFiles  = 4096
	rawPassBytes = 1 << 30
)

// rawFile is one data file of a raw topic's table with its first offset.
type rawFile struct {
	task  table.FileScanTask
	first int64
}

// compactRaw merges the small files of a raw topic's table (one per
// partition per commit: twenty a second under load) partition by partition:
// a run of consecutive small files, offsets contiguous, becomes one file
// with its rows in offset order, in a replace snapshot (no records, the
// same rows). Reads by offset (derive.RawFiles) find the records in the
// new file; the produce path only appends, so the rewrite never loses a
// race to it for long (iceberg-go replays it on the new head).
func (p *pass) compactRaw(ctx context.Context, tbl *table.Table, rep *CompactionReport) error {
	partitions, err := strconv.Atoi(tbl.Properties()[changelog.PropPartitions])
	if err != nil || partitions < 1 {
		return fmt.Errorf("raw topic table: %s=%q is not a partition count", changelog.PropPartitions, tbl.Properties()[changelog.PropPartitions])
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		return fmt.Errorf("plan files: %w", err)
	}
	rep.DataFilesBefore = len(tasks)
	byPart := map[int32][]rawFile{}
	for _, t := range tasks {
		if len(t.DeleteFiles) > 0 {
			return fmt.Errorf("raw topic table has delete files on %s: another writer deleted rows", t.File.FilePath())
		}
		part, first, err := rawFileStart(t.File)
		if err != nil {
			return err
		}
		byPart[part] = append(byPart[part], rawFile{task: t, first: first})
	}
	parts := make([]int32, 0, len(byPart))
	for part := range byPart {
		parts = append(parts, part)
	}
	sort.Slice(parts, func(i, j int) bool { return parts[i] < parts[j] })
	var (
		group []table.FileScanTask
		input int64
	)
	for _, part := range parts {
		run := rawGroup(byPart[part], p.opts.CompactDataFiles, rawRunFiles)
		var size int64
		for _, t := range run {
			size += t.File.FileSizeBytes()
		}
		if len(group) > 0 && input+size > rawPassBytes {
			break
		}
		group, input = append(group, run...), input+size
	}
	if len(group) == 0 {
		rep.Skipped = fmt.Sprintf("no partition has more than %d small files in a row", p.opts.CompactDataFiles)
		return nil
	}
	rep.DataFilesRewritten = len(group)
	if p.opts.DryRun {
		return nil
	}
	// Each partition's run is its own group: one output file per run,
	// its rows read in task (offset) order.
	var old, added []iceberg.DataFile
	var written []string
	for start := 0; start < len(group); {
		end := start + 1
		for end < len(group) && samePartition(group[start].File, group[end].File) {
			end++
		}
		var size int64
		for _, t := range group[start:end] {
			size += t.File.FileSizeBytes()
		}
		gr, err := table.ExecuteCompactionGroup(ctx, tbl, table.CompactionTaskGroup{Tasks: group[start:end], TotalSizeBytes: size},
			table.WithCompactionScanConcurrency(1), table.WithCompactionTargetFileSize(rawTargetFile))
		if err != nil {
			_, _ = lake.RemoveFiles(ctx, tbl, written)
			return fmt.Errorf("rewrite raw data files: %w", err)
		}
		for _, f := range gr.NewDataFiles {
			written = append(written, f.FilePath())
		}
		old = append(old, gr.OldDataFiles...)
		added = append(added, gr.NewDataFiles...)
		start = end
	}
	if p.opts.BeforeCompactionCommit != nil {
		p.opts.BeforeCompactionCommit(ctx)
	}
	// The rewrite holds on any head that still has the old files (the
	// produce path only appends): the swap is staged on the newest head,
	// with the writers of this gateway holding their commits meanwhile.
	props := iceberg.Properties{SummaryMaintenance: "compaction",
		changelog.SummaryLSMCounts: changelog.EncodeLSMCounts(make([]int64, partitions))}
	var committed *table.Table
	unknown := false
	swap := func() error {
		var err error
		_, committed, err = p.commitStepWith(ctx, "raw compaction", func(ctx context.Context, head *table.Table, tx *table.Transaction) (bool, error) {
			if err := tx.ReplaceDataFilesWithDataFiles(ctx, old, added, props); err != nil {
				return false, fmt.Errorf("stage: %w", err)
			}
			return true, nil
		}, func(ctx context.Context, base *table.Table, tx *table.Transaction) (*table.Table, error) {
			c, err := lake.CommitOrClean(ctx, base, tx)
			unknown = err != nil && !lake.IsCommitConflict(err)
			return c, err
		})
		return err
	}
	if err = p.holdingWriters(ctx, swap); err != nil {
		if !unknown {
			// Nothing references the new files.
			_, _ = lake.RemoveFiles(ctx, tbl, written)
		}
		return fmt.Errorf("commit raw compaction: %w", err)
	}
	rep.DataFilesAdded = len(added)
	rep.Rewrites = 1
	if snap := committed.CurrentSnapshot(); snap != nil {
		rep.SnapshotID = snap.SnapshotID
	}
	p.log.Info().Int("data_files", len(old)).Int("into", len(added)).Msg("merged a raw topic's small files")
	return nil
}

// rawGroup picks, from one partition's files, the longest run of
// consecutive small files (at most limit) when it holds more than
// threshold files: merging fewer is not worth a rewrite.
func rawGroup(files []rawFile, threshold, limit int) []table.FileScanTask {
	sort.Slice(files, func(i, j int) bool { return files[i].first < files[j].first })
	var best, cur []table.FileScanTask
	var size int64
	for _, f := range files {
		if f.task.File.FileSizeBytes() >= rawSmallFile || len(cur) >= limit || size >= rawTargetFile {
			if len(cur) > len(best) {
				best = cur
			}
			cur, size = nil, 0
			if f.task.File.FileSizeBytes() >= rawSmallFile {
				continue
			}
		}
		cur = append(cur, f.task)
		size += f.task.File.FileSizeBytes()
	}
	if len(cur) > len(best) {
		best = cur
	}
	if len(best) <= threshold {
		return nil
	}
	return best
}

func samePartition(a, b iceberg.DataFile) bool {
	pa, _, _ := rawFileStart(a)
	pb, _, _ := rawFileStart(b)
	return pa == pb
}

// rawFileStart is a raw data file's Kafka partition and first offset.
func rawFileStart(df iceberg.DataFile) (int32, int64, error) {
	v, ok := df.Partition()[changelog.RawSpecFieldID]
	p, isInt := v.(int32)
	if !ok || !isInt {
		return 0, 0, fmt.Errorf("raw data file %s has no Kafka partition value", df.FilePath())
	}
	lo, ok := df.LowerBoundValues()[changelog.RawOffsetFieldID]
	if !ok || len(lo) != 8 {
		return 0, 0, fmt.Errorf("raw data file %s records no offset bound", df.FilePath())
	}
	return p, int64(binary.LittleEndian.Uint64(lo)), nil
}
