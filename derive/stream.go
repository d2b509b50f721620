package derive

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/changelog"
)

// Stream reads the records of a large snapshot a range at a time, holding
// only the rows of the range it returns and the batch being cut: the
// changes of a pure append (OpenAppendStream: the inserts Derive gives
// it, in the same order) or the live rows of a snapshot (OpenSnapshotStream:
// what ReadSnapshot gives it). A new consumer of a table written in one
// ten-million-row snapshot, or of a compacted prefix that large, streams it
// instead of holding all of it decoded (about 1.9 GiB). Reading the ranges
// in order decodes every file once; a range elsewhere reopens its file at
// the row group that holds it (a file with deletes: at its start).
//
// A Stream is not safe for concurrent use; Close releases it.
type Stream struct {
	tbl  *table.Table
	ref  changelog.SnapshotRef
	opts Options
	plan *streamPlan
	scan *table.Scan

	// ctx bounds the reader of the open file; cancel ends it.
	ctx    context.Context
	cancel context.CancelFunc

	// pos is the next record the stream reads.
	pos int64
	// file is the added file being read (-1: none open) and fileRow the
	// row of it that the next row read from next is.
	file    int
	fileRow int64
	next    func() (arrow.RecordBatch, error, bool)
	stop    func()
	// held is the batch being cut, its rows from heldRow on not read yet.
	held    arrow.RecordBatch
	heldRow int64
}

// OpenAppendStream plans snap and returns a stream over its records, or
// ok false when snap is not a pure append on one partition (see
// AppendCount): Derive it whole. ctx bounds the stream's reads for its
// whole life, past this call.
func OpenAppendStream(ctx context.Context, tbl *table.Table, snap changelog.SnapshotRef, opts Options) (_ *Stream, ok bool, err error) {
	defer recoverRead(&err, func() string {
		return fmt.Sprintf("plan the records of %s snapshot %d", tableName(tbl), snap.SnapshotID)
	})
	p, ok, err := planAppend(ctx, tbl, snap, opts)
	if !ok || err != nil {
		return nil, ok, err
	}
	notePlan(tbl, p.snap, p.delta, opts.PlanCache)
	return newStream(ctx, tbl, snap, opts, p), true, nil
}

// newStream returns a stream of the records p plans.
func newStream(ctx context.Context, tbl *table.Table, snap changelog.SnapshotRef, opts Options, p *streamPlan) *Stream {
	scan := tbl.Scan(table.WithSnapshotID(p.snap.SnapshotID), table.WithArrowBatchSize(streamBatchRows))
	ctx, cancel := context.WithCancel(ctx)
	return &Stream{tbl: tbl, ref: snap, opts: opts, plan: p, scan: scan, ctx: ctx, cancel: cancel, file: -1}
}

// streamBatchRows is the rows per batch the stream decodes: the scanner
// holds a few of them ahead of the stream, which holds one while cutting
// it into ranges.
const streamBatchRows = 32 << 10

// Len is the number of records of the snapshot.
func (s *Stream) Len() int64 { return s.plan.total() }

// Read returns the records [from, from+n) of the snapshot as a prepared
// Changes of their own, the first of them at record 0. ctx bounds the
// read: when it ends first, the stream's reader is cancelled (and the
// stream of no further use). After an error the next Read seeks afresh.
func (s *Stream) Read(ctx context.Context, from, n int64) (_ *changelog.Changes, err error) {
	stop := context.AfterFunc(ctx, s.cancel)
	defer stop()
	defer func() {
		if err != nil {
			s.closeFile() // where the reader is is unknown
		}
	}()
	defer recoverRead(&err, func() string {
		return fmt.Sprintf("read records [%d, %d) of %s snapshot %d", from, from+n, tableName(s.tbl), s.ref.SnapshotID)
	})
	if from < 0 || n < 0 || from+n > s.Len() {
		return nil, fmt.Errorf("records [%d, %d) of %s snapshot %d: it has %d", from, from+n, tableName(s.tbl), s.ref.SnapshotID, s.Len())
	}
	if from != s.pos || (s.file < 0 && n > 0) {
		if err := s.seek(from); err != nil {
			return nil, err
		}
	}
	c, err := newChanges(s.tbl, s.plan.snap, s.ref, s.opts)
	if err != nil {
		return nil, err
	}
	c.Records = make([]changelog.Record, 0, n)
	for int64(len(c.Records)) < n {
		b, err := s.cut(n - int64(len(c.Records)))
		if err != nil {
			c.Release()
			return nil, err
		}
		bi := int32(len(c.Batches))
		c.Batches = append(c.Batches, b)
		for r := range int32(b.NumRows()) {
			c.Records = append(c.Records, changelog.Record{Op: s.plan.op, Before: changelog.NoRow, After: changelog.RowRef{Batch: bi, Row: r}})
		}
	}
	if err := finish(c); err != nil {
		return nil, err
	}
	return c, nil
}

// Close ends the reader of the open file.
func (s *Stream) Close() {
	s.closeFile()
	s.cancel()
}

// cut returns the next at most max rows, from the held batch or, when it
// is used up, from the next batch of the open file (or of the next file).
func (s *Stream) cut(max int64) (arrow.RecordBatch, error) {
	for s.held == nil || s.heldRow == s.held.NumRows() {
		if err := s.nextBatch(); err != nil {
			return nil, err
		}
	}
	end := min(s.heldRow+max, s.held.NumRows())
	b := s.held.NewSlice(s.heldRow, end)
	s.pos += end - s.heldRow
	s.heldRow = end
	return b, nil
}

// nextBatch reads the next batch into held, moving to the next file at
// the end of one, whose rows must be as many as its manifest says.
func (s *Stream) nextBatch() error {
	s.releaseHeld()
	if s.file >= 0 {
		b, err, more := s.next()
		if err != nil {
			return fmt.Errorf("data file %s: %w", s.filePath(), err)
		}
		if more {
			s.fileRow += b.NumRows()
			if s.fileRow > s.fileCount() {
				b.Release()
				return fmt.Errorf("data file %s gave more than the %d rows it was planned to", s.filePath(), s.fileCount())
			}
			s.held, s.heldRow = b, 0
			return nil
		}
		if s.fileRow != s.fileCount() {
			return fmt.Errorf("data file %s gave %d rows, it was planned to give %d", s.filePath(), s.fileRow, s.fileCount())
		}
		if s.file+1 >= len(s.plan.tasks) {
			return fmt.Errorf("records of %s snapshot %d end at %d", tableName(s.tbl), s.ref.SnapshotID, s.pos)
		}
	}
	return s.openFile(s.file+1, 0)
}

// seek reopens the stream at record r.
func (s *Stream) seek(r int64) error {
	s.closeFile()
	s.pos = r
	if r == s.Len() {
		return nil
	}
	i := s.plan.fileOf(r)
	within := r - s.plan.first[i]
	if err := s.openFile(i, within); err != nil {
		return err
	}
	// Rows of the row group before r are read and dropped.
	for skip := within - s.fileRow; skip > 0; {
		if s.held == nil || s.heldRow == s.held.NumRows() {
			if err := s.nextBatch(); err != nil {
				return err
			}
		}
		n := min(skip, s.held.NumRows()-s.heldRow)
		s.heldRow += n
		skip -= n
	}
	return nil
}

// openFile opens added file i at the row group holding its row within
// (the whole file when within is 0). A flat file is read by fileRows, in
// the stream's goroutine; another through iceberg-go's scanner once it
// passed checkFile (the scanner's goroutines must never meet a damaged
// file).
func (s *Stream) openFile(i int, within int64) error {
	s.closeFile()
	task := s.plan.tasks[i]
	if !plainTask(task) {
		// Its rows are those its deletes leave: read from the start
		// of the file, and the rows before within dropped by the caller.
		if err := checkTaskFiles(s.ctx, s.plan.fs, []table.FileScanTask{task}); err != nil {
			return err
		}
		return s.scanFrom(i, task, 0)
	}
	switch fr, groupRow, err := openFileRows(s.ctx, s.plan.fs, s.scan, task.File, within, streamBatchRows); {
	case err == nil:
		s.next = func() (arrow.RecordBatch, error, bool) {
			b, err := fr.next()
			return b, err, b != nil
		}
		s.stop, s.file, s.fileRow = fr.close, i, groupRow
		return nil
	case !errors.Is(err, errNotFlat):
		return err
	}
	if err := checkTaskFiles(s.ctx, s.plan.fs, []table.FileScanTask{task}); err != nil {
		return err
	}
	s.fileRow = 0
	if within > 0 {
		d, err := openDataFile(s.plan.fs, task.File)
		if err != nil {
			return err
		}
		layout, err := rowGroupLayoutOf(d, task.File)
		d.Close()
		if err != nil {
			return err
		}
		g := layout.groupOf(within)
		if g < 0 {
			return fmt.Errorf("data file %s has no row %d", task.File.FilePath(), within)
		}
		task.Start = layout.offset[g]
		task.Length = layout.fileSize - task.Start
		s.fileRow = layout.firstRow[g]
	}
	return s.scanFrom(i, task, s.fileRow)
}

// scanFrom reads task i through iceberg-go's scanner, whose first row is
// row fileRow of the task's records.
func (s *Stream) scanFrom(i int, task table.FileScanTask, fileRow int64) error {
	_, it, err := s.scan.ReadTasks(s.ctx, []table.FileScanTask{task})
	if err != nil {
		return fmt.Errorf("plan read of data file %s: %w", task.File.FilePath(), err)
	}
	s.next, s.stop = iter.Pull2(it)
	s.file, s.fileRow = i, fileRow
	return nil
}

func (s *Stream) closeFile() {
	s.releaseHeld()
	if s.stop != nil {
		s.stop()
	}
	s.next, s.stop, s.file = nil, nil, -1
}

func (s *Stream) releaseHeld() {
	if s.held != nil {
		s.held.Release()
		s.held, s.heldRow = nil, 0
	}
}

func (s *Stream) fileCount() int64 { return s.plan.rows(s.file) }
func (s *Stream) filePath() string { return s.plan.tasks[s.file].File.FilePath() }
