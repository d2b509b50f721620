package produce

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/rs/zerolog"

	"github.com/lakegw/lakegw/changelog"
	"github.com/lakegw/lakegw/lake"
)

// writer is the single writer of one raw topic's table on this gateway:
// it takes the batches every request accepts (queue) and commits them
// together, one Iceberg commit per group, assigning offsets from the
// table's end offsets in the order the batches were accepted.
type writer struct {
	svc        *Service
	topic      string
	ident      table.Identifier
	partitions int32
	log        zerolog.Logger

	mu     sync.Mutex
	seq    *seqState
	queue  []*ticket
	queued int64 // bytes in queue
	wake   chan struct{}
	done   chan struct{}

	// tbl is the head as last committed or loaded (run's goroutine only).
	tbl *table.Table
}

// maxCommitAttempts bounds the retries of a commit that keeps losing to
// other committers (maintenance, another gateway).
const maxCommitAttempts = 20

// run commits groups until ctx ends; the batches still queued then fail
// with ErrClosed.
func (w *writer) run(ctx context.Context) {
	defer close(w.done)
	last := time.Time{}
	for {
		select {
		case <-ctx.Done():
			w.failQueued(ErrClosed)
			return
		case <-w.wake:
		}
		// Group commit: at most one commit per interval, so a burst of
		// producers shares one snapshot; a full group goes at once.
		if wait := w.svc.cfg.CommitInterval - time.Since(last); wait > 0 {
			timer := time.NewTimer(wait)
			for full := false; !full; {
				select {
				case <-ctx.Done():
					timer.Stop()
					w.failQueued(ErrClosed)
					return
				case <-timer.C:
					full = true
				case <-w.wake:
					w.mu.Lock()
					full = w.queued >= w.svc.cfg.MaxCommitBytes
					w.mu.Unlock()
					if full {
						timer.Stop()
					}
				}
			}
		}
		w.mu.Lock()
		group := w.queue
		w.queue, w.queued = nil, 0
		w.mu.Unlock()
		if len(group) == 0 {
			continue
		}
		last = time.Now()
		w.commitGroup(ctx, group)
	}
}

// commitGroup commits group and wakes its requests.
func (w *writer) commitGroup(ctx context.Context, group []*ticket) {
	start := time.Now()
	bases, snapshotID, err := w.commit(ctx, group)
	w.mu.Lock()
	if err != nil {
		// Every batch accepted since depends on this group's sequences:
		// all fail, and every producer retries from its committed state.
		rest := w.queue
		w.queue, w.queued = nil, 0
		w.seq.failed()
		w.mu.Unlock()
		w.log.Warn().Err(err).Int("batches", len(group)+len(rest)).Msg("commit of produced records failed; their producers retry")
		for _, t := range append(group, rest...) {
			t.finish(-1, fmt.Errorf("%w: %w", ErrCommitFailed, err))
			w.svc.release(t.size)
		}
		return
	}
	for i, t := range group {
		t.res.BaseOffset = bases[i]
	}
	w.seq.committed(group)
	w.mu.Unlock()
	for i, t := range group {
		t.finish(bases[i], nil)
		w.svc.release(t.size)
	}
	w.log.Debug().Int64("snapshot_id", snapshotID).Int("batches", len(group)).Dur("took", time.Since(start)).Msg("committed produced records")
	if w.svc.cfg.OnCommit != nil {
		w.svc.cfg.OnCommit(w.topic)
	}
}

// commit writes the group's rows and commits them, retrying on a
// conflict; it returns each batch's first offset.
func (w *writer) commit(ctx context.Context, group []*ticket) (bases []int64, snapshotID int64, err error) {
	var (
		files     []iceberg.DataFile
		filesEnds []int64
	)
	defer func() {
		if err != nil && files != nil && lake.IsCommitConflict(errors.Unwrap(err)) {
			w.removeFiles(ctx, files)
		}
	}()
	for attempt := 1; ; attempt++ {
		tbl := w.tbl
		if tbl == nil || attempt > 1 {
			if tbl, err = w.svc.cat.LoadTable(ctx, w.ident); err != nil {
				return nil, 0, fmt.Errorf("load %s: %w", w.topic, err)
			}
		}
		ends, err := rawEnds(ctx, tbl, w.partitions)
		if err != nil {
			return nil, 0, err
		}
		if files == nil || !slices.Equal(ends, filesEnds) {
			// Offsets moved (another writer of the table): the rows are
			// written again at the new ones.
			if files != nil {
				w.removeFiles(ctx, files)
			}
			if files, bases, err = w.writeFiles(ctx, tbl, ends, group); err != nil {
				return nil, 0, err
			}
			filesEnds = ends
		}
		props, err := w.summary(ends, group, bases)
		if err != nil {
			return nil, 0, err
		}
		committed, err := commitFiles(ctx, tbl, files, props)
		if err == nil {
			w.tbl = committed
			return bases, committed.CurrentSnapshot().SnapshotID, nil
		}
		if !lake.IsCommitConflict(err) || attempt >= maxCommitAttempts || ctx.Err() != nil {
			// After anything but a clean conflict the files may be
			// live: they stay (orphan cleanup removes them if not).
			w.tbl = nil
			return nil, 0, fmt.Errorf("commit to %s: %w", w.topic, err)
		}
	}
}

// summary is the snapshot summary of a commit of group at ends: the
// record counts and end offsets of every partition and the state of the
// group's producers after it.
func (w *writer) summary(ends []int64, group []*ticket, bases []int64) (iceberg.Properties, error) {
	counts := make([]int64, w.partitions)
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
	w.mu.Lock()
	ps := w.seq.after(group, bases)
	w.mu.Unlock()
	if len(ps) > 0 {
		v, err := encodeProducers(ps)
		if err != nil {
			return nil, err
		}
		props[SummaryProducers] = v
	}
	return props, nil
}

// writeFiles assigns the group's offsets from ends, in the order the
// batches were accepted, and writes each partition's rows.
func (w *writer) writeFiles(ctx context.Context, tbl *table.Table, ends []int64, group []*ticket) ([]iceberg.DataFile, []int64, error) {
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
			w.removeFiles(ctx, files)
			return nil, nil, fmt.Errorf("write %s data files: %w", w.topic, err)
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

func (w *writer) removeFiles(ctx context.Context, files []iceberg.DataFile) {
	if len(files) == 0 || w.tbl == nil && len(files) == 0 {
		return
	}
	paths := make([]string, len(files))
	for i, f := range files {
		paths[i] = f.FilePath()
	}
	tbl := w.tbl
	if tbl == nil {
		return // orphan cleanup removes them
	}
	if _, err := lake.RemoveFiles(ctx, tbl, paths); err != nil {
		w.log.Warn().Err(err).Msg("could not remove the data files of a commit that did not happen; orphan cleanup will")
	}
}

// failQueued fails every queued batch.
func (w *writer) failQueued(err error) {
	w.mu.Lock()
	q := w.queue
	w.queue, w.queued = nil, 0
	w.seq.failed()
	w.mu.Unlock()
	for _, t := range q {
		t.finish(-1, err)
		w.svc.release(t.size)
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
