package produce

import (
	"context"
	"fmt"
	"iter"
	"slices"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/rs/zerolog"

	"github.com/lakegw/lakegw/changelog"
	"github.com/lakegw/lakegw/lake"
	"github.com/lakegw/lakegw/maintain"
)

// appendTarget commits the batches of a topic whose records are rows
// appended to its table, numbered by offset: a raw topic's (one row per
// record as it came) or an append table topic's (one row per record, in
// the table's schema). Offsets come from the table's end offsets, one data
// file per partition per commit.
type appendTarget struct {
	rows       rowSource
	cat        catalog.Catalog
	topic      string
	ident      table.Identifier
	partitions int32
	log        zerolog.Logger
	// tbl is the head as loaded (after the last commit, afterCommit),
	// lastBases the offsets the last commit attempt wrote its rows at and
	// lastEnds the end offsets after them (the writer's goroutine only).
	tbl       *table.Table
	lastBases []int64
	lastEnds  []int64
	// history, when set (a raw topic's table), expires the older
	// snapshots in each commit; cleanFrom is the head the last commit was
	// made on, whose expired snapshots' files afterCommit removes.
	history   *maintain.HistoryCap
	cleanFrom *table.Table
	// committedAt is the metadata file of the last commit, which
	// afterCommit loads the next head from, parsed by meta: only what
	// changed since the previous file is decoded (a full parse of the
	// retained snapshots was a tenth of the gateway's CPU under load).
	committedAt string
	meta        *lake.MetadataReader
}

// prepare checks a batch's records against the table's rows.
func (r *appendTarget) prepare(t *ticket) error { return r.rows.prepare(t) }

// rowSource turns a partition's batches into rows of the table.
type rowSource interface {
	// schema is the Arrow schema of the rows, with field ids.
	schema() *arrow.Schema
	// prepare checks a batch's records before it is accepted.
	prepare(t *ticket) error
	// rows are the rows of tickets, offsets from base on, in order.
	rows(partition int32, base int64, tickets []*ticket) []arrow.RecordBatch
}

// commit writes the group's rows and commits them, retrying on a
// conflict; it returns each batch's first offset.
func (r *appendTarget) commit(ctx context.Context, group []*ticket, producers func(bases []int64) (iceberg.Properties, error)) (landed, error) {
	var (
		files     []iceberg.DataFile
		filesEnds []int64
		bases     []int64
		err       error
	)
	for attempt := 1; ; attempt++ {
		tbl := r.tbl
		if tbl != nil && len(tbl.Schema().Fields()) != r.rows.schema().NumFields() {
			tbl = nil // the schema evolved since this head was loaded
		}
		if tbl == nil || attempt > 1 {
			if tbl, err = r.cat.LoadTable(ctx, r.ident); err != nil {
				if files != nil {
					r.removeFiles(ctx, r.tbl, files)
				}
				return landed{}, fmt.Errorf("load %s: %w", r.topic, err)
			}
		}
		ends, err := rawEnds(ctx, tbl, r.partitions)
		if err != nil {
			r.removeFiles(ctx, tbl, files)
			return landed{}, err
		}
		if files == nil || !slices.Equal(ends, filesEnds) {
			// Offsets moved (another writer of the table): the rows are
			// written again at the new ones.
			r.removeFiles(ctx, tbl, files)
			wstart := time.Now()
			if files, bases, err = r.writeFiles(ctx, tbl, ends, group); err != nil {
				return landed{}, err
			}
			r.log.Debug().Dur("took", time.Since(wstart)).Int("files", len(files)).Msg("wrote the data files of a commit")
			filesEnds = ends
			r.lastBases, r.lastEnds = bases, endsAfter(ends, group)
		}
		props, err := r.summary(ends, group, bases, producers)
		if err != nil {
			r.removeFiles(ctx, tbl, files)
			return landed{}, err
		}
		cstart := time.Now()
		committed, err := commitFiles(ctx, tbl, files, props, r.history)
		r.log.Debug().Dur("took", time.Since(cstart)).Int("attempt", attempt).Err(err).Msg("committed to the catalog")
		if err == nil {
			// The next commit is made on the head as loaded again by
			// afterCommit, not on committed: a table iceberg-go returns
			// from a commit keeps what it was built from, and chaining
			// them grew the heap by 160 KB a commit (twenty a second).
			r.tbl, r.cleanFrom, r.committedAt = nil, tbl, committed.MetadataLocation()
			return landed{bases: bases, snapshotID: committed.CurrentSnapshot().SnapshotID, ends: r.lastEnds}, nil
		}
		if lake.IsCommitConflict(err) {
			if attempt < maxCommitAttempts && ctx.Err() == nil {
				continue
			}
			// The catalog took none of it: the files are garbage now.
			r.removeFiles(ctx, tbl, files)
			return landed{}, fmt.Errorf("commit to %s: gave up after %d conflicts: %w", r.topic, attempt, err)
		}
		// After anything but a clean conflict the catalog may have taken
		// the commit: the files stay (orphan cleanup removes them if it
		// did not), and the writer finds out (writer.resolve).
		r.tbl = nil
		return landed{}, &maybeCommitted{fmt.Errorf("commit to %s: %w", r.topic, err)}
	}
}

// find looks for the commit id names among the table's snapshots: the
// outcome of a commit whose answer was lost. Its bases are those the last
// attempt wrote the rows at.
func (r *appendTarget) find(ctx context.Context, id string, group []*ticket) (landed, bool, error) {
	tbl, err := r.cat.LoadTable(ctx, r.ident)
	if err != nil {
		return landed{}, false, err
	}
	snap := findCommit(tbl, id)
	if snap == nil {
		return landed{}, false, nil
	}
	r.tbl = tbl
	return landed{bases: r.lastBases, snapshotID: snap.SnapshotID, ends: r.lastEnds}, true, nil
}

// endsAfter is every partition's end offset once group is appended at
// ends.
func endsAfter(ends []int64, group []*ticket) []int64 {
	after := slices.Clone(ends)
	for _, t := range group {
		after[t.batch.Partition] += int64(len(t.batch.Records))
	}
	return after
}

// load is the table as it is now.
func (r *appendTarget) load(ctx context.Context) (*table.Table, error) {
	return r.cat.LoadTable(ctx, r.ident)
}

// summary is the snapshot summary of a commit of group at ends: the
// record counts and end offsets of every partition and the state of the
// group's producers after it.
func (r *appendTarget) summary(ends []int64, group []*ticket, bases []int64, producers func([]int64) (iceberg.Properties, error)) (iceberg.Properties, error) {
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
func (r *appendTarget) writeFiles(ctx context.Context, tbl *table.Table, ends []int64, group []*ticket) ([]iceberg.DataFile, []int64, error) {
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
			for _, b := range r.rows.rows(p, ends[p], byPart[p]) {
				if !yield(b, nil) {
					return
				}
			}
		}
	}
	var files []iceberg.DataFile
	for df, err := range table.WriteRecords(ctx, tbl, r.rows.schema(), iter.Seq2[arrow.RecordBatch, error](batches)) {
		if err != nil {
			r.removeFiles(ctx, tbl, files)
			return nil, nil, fmt.Errorf("write %s data files: %w", r.topic, err)
		}
		files = append(files, df)
	}
	return files, bases, nil
}

// commitFiles appends files in one snapshot pinned to tbl's head, so that
// the end offsets the rows were numbered from are the table's, expiring
// the history past history's cap in the same commit (nil: none).
func commitFiles(ctx context.Context, tbl *table.Table, files []iceberg.DataFile, props iceberg.Properties, history *maintain.HistoryCap) (*table.Table, error) {
	tx := tbl.NewTransaction()
	if err := tx.AssertRefSnapshotID(table.MainBranch); err != nil {
		return nil, fmt.Errorf("pin branch: %w", err)
	}
	if err := tx.AddDataFiles(ctx, files, props, table.WithoutDuplicateCheck()); err != nil {
		return nil, fmt.Errorf("stage append: %w", err)
	}
	if history != nil {
		if err := history.Stage(tx, tbl); err != nil {
			return nil, err
		}
	}
	return lake.CommitOrClean(ctx, tbl, tx)
}

// afterCommit loads the head the next commit is made on and removes the
// files of the snapshots the last commit expired, once its batches are
// answered (their acknowledgement waits for neither). A file left by a
// failure is an orphan the maintenance pass removes; a head that cannot be
// loaded is loaded by the next commit.
func (r *appendTarget) afterCommit(ctx context.Context) {
	before := r.cleanFrom
	r.cleanFrom = nil
	if before == nil {
		return
	}
	if r.meta == nil {
		r.meta = lake.NewMetadataReader()
	}
	// The committed file is the head unless another writer committed
	// since: the next commit, pinned to it, then conflicts and loads the
	// table from the catalog.
	head, err := lake.LoadTableAt(ctx, r.cat, r.ident, r.committedAt, r.meta)
	if err != nil {
		r.log.Warn().Err(err).Msg("could not load the table after a commit; the next commit loads it")
		return
	}
	r.tbl = head
	if r.history == nil {
		return
	}
	if n, err := r.history.Clean(ctx, before, head); err != nil {
		r.log.Warn().Err(err).Int("removed", n).Msg("could not remove the files of snapshots a commit expired; orphan cleanup will")
	}
}

func (r *appendTarget) removeFiles(ctx context.Context, tbl *table.Table, files []iceberg.DataFile) {
	if len(files) == 0 || tbl == nil {
		return // nothing, or no IO to remove them with: orphan cleanup will
	}
	paths := make([]string, len(files))
	for i, f := range files {
		paths[i] = f.FilePath()
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
