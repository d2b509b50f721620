package produce

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/rs/zerolog"

	"github.com/lakegw/lakegw/changelog"
	"github.com/lakegw/lakegw/lake"
)

// rawTarget commits a raw topic's batches: one row per record, offsets
// from the table's end offsets, one data file per partition per commit.
type rawTarget struct {
	cat        catalog.Catalog
	topic      string
	ident      table.Identifier
	partitions int32
	log        zerolog.Logger
	// tbl is the head as last committed or loaded (the writer's goroutine
	// only).
	tbl *table.Table
}

// prepare: any record fits a raw topic.
func (r *rawTarget) prepare(*ticket) error { return nil }

// commit writes the group's rows and commits them, retrying on a
// conflict; it returns each batch's first offset.
func (r *rawTarget) commit(ctx context.Context, group []*ticket, producers func(bases []int64) (iceberg.Properties, error)) (bases []int64, snapshotID int64, err error) {
	var (
		files     []iceberg.DataFile
		filesEnds []int64
	)
	defer func() {
		if err != nil && files != nil && lake.IsCommitConflict(errors.Unwrap(err)) {
			r.removeFiles(ctx, files)
		}
	}()
	for attempt := 1; ; attempt++ {
		tbl := r.tbl
		if tbl == nil || attempt > 1 {
			if tbl, err = r.cat.LoadTable(ctx, r.ident); err != nil {
				return nil, 0, fmt.Errorf("load %s: %w", r.topic, err)
			}
		}
		ends, err := rawEnds(ctx, tbl, r.partitions)
		if err != nil {
			return nil, 0, err
		}
		if files == nil || !slices.Equal(ends, filesEnds) {
			// Offsets moved (another writer of the table): the rows are
			// written again at the new ones.
			if files != nil {
				r.removeFiles(ctx, files)
			}
			if files, bases, err = r.writeFiles(ctx, tbl, ends, group); err != nil {
				return nil, 0, err
			}
			filesEnds = ends
		}
		props, err := r.summary(ends, group, bases, producers)
		if err != nil {
			return nil, 0, err
		}
		committed, err := commitFiles(ctx, tbl, files, props)
		if err == nil {
			r.tbl = committed
			return bases, committed.CurrentSnapshot().SnapshotID, nil
		}
		if !lake.IsCommitConflict(err) || attempt >= maxCommitAttempts || ctx.Err() != nil {
			// After anything but a clean conflict the files may be
			// live: they stay (orphan cleanup removes them if not).
			r.tbl = nil
			return nil, 0, fmt.Errorf("commit to %s: %w", r.topic, err)
		}
	}
}

// summary is the snapshot summary of a commit of group at ends: the
// record counts and end offsets of every partition and the state of the
// group's producers after it.
func (r *rawTarget) summary(ends []int64, group []*ticket, bases []int64, producers func([]int64) (iceberg.Properties, error)) (iceberg.Properties, error) {
	counts := make([]int64, r.partitions)
	for _, t := range group {
		counts[t.batch.Partition] += int64(len(t.batch.Records))
	}
	after := make([]int64, len(ends))
	for p := range ends {
		after[p] = ends[p] + counts[p]
	}
	props := iceberg.Properties{
		changelog.SummaryLSMCounts: changelog.EncodeLSMCounts(counts),
		changelog.SummaryLSMEnds:   changelog.EncodeLSMEnds(after),
	}
	// The producers' state as it will be once this commit holds the
	// group; applied to the writer's state when the commit succeeds.
	ps, err := producers(bases)
	if err != nil {
		return nil, err
	}
	for k, v := range ps {
		props[k] = v
	}
	return props, nil
}

// writeFiles assigns the group's offsets from ends, in the order the
// batches were accepted, and writes each partition's rows.
func (r *rawTarget) writeFiles(ctx context.Context, tbl *table.Table, ends []int64, group []*ticket) ([]iceberg.DataFile, []int64, error) {
	bases := make([]int64, len(group))
	next := slices.Clone(ends)
	byPart := make(map[int32][]*ticket)
	for i, t := range group {
		p := t.batch.Partition
		bases[i] = next[p]
		next[p] += int64(len(t.batch.Records))
		byPart[p] = append(byPart[p], t)
	}
	parts := make([]int32, 0, len(byPart))
	for p := range byPart {
		parts = append(parts, p)
	}
	slices.Sort(parts)
	batches := func(yield func(arrow.RecordBatch, error) bool) {
		for _, p := range parts {
			if !yield(rawBatch(p, ends[p], byPart[p]), nil) {
				return
			}
		}
	}
	var files []iceberg.DataFile
	for df, err := range table.WriteRecords(ctx, tbl, rawArrowSchema, iter.Seq2[arrow.RecordBatch, error](batches)) {
		if err != nil {
			r.removeFiles(ctx, files)
			return nil, nil, fmt.Errorf("write %s data files: %w", r.topic, err)
		}
		files = append(files, df)
	}
	return files, bases, nil
}

// commitFiles appends files in one snapshot pinned to tbl's head, so that
// the end offsets the rows were numbered from are the table's.
func commitFiles(ctx context.Context, tbl *table.Table, files []iceberg.DataFile, props iceberg.Properties) (*table.Table, error) {
	tx := tbl.NewTransaction()
	if err := tx.AssertRefSnapshotID(table.MainBranch); err != nil {
		return nil, fmt.Errorf("pin branch: %w", err)
	}
	if err := tx.AddDataFiles(ctx, files, props, table.WithoutDuplicateCheck()); err != nil {
		return nil, fmt.Errorf("stage append: %w", err)
	}
	return lake.CommitOrClean(ctx, tbl, tx)
}

func (r *rawTarget) removeFiles(ctx context.Context, files []iceberg.DataFile) {
	if len(files) == 0 || r.tbl == nil && len(files) == 0 {
		return
	}
	paths := make([]string, len(files))
	for i, f := range files {
		paths[i] = f.FilePath()
	}
	tbl := r.tbl
	if tbl == nil {
		return // orphan cleanup removes them
	}
	if _, err := lake.RemoveFiles(ctx, tbl, paths); err != nil {
		r.log.Warn().Err(err).Msg("could not remove the data files of a commit that did not happen; orphan cleanup will")
	}
}

// rawEnds is the end offset of every partition at tbl's head.
func rawEnds(ctx context.Context, tbl *table.Table, partitions int32) ([]int64, error) {
	ends, err := changelog.RawEnds(ctx, tbl, tbl.CurrentSnapshot(), int(partitions))
	if err != nil {
		return nil, fmt.Errorf("end offsets of %s: %w", lake.TopicName(tbl.Identifier()), err)
	}
	return ends, nil
}
