package derive

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// rowGroupLayout is where each row group of a Parquet data file starts, in
// rows and in bytes (the byte offset iceberg-go's reader selects row groups
// by when a task has a range).
type rowGroupLayout struct {
	firstRow []int64
	numRows  []int64
	offset   []int64
	fileSize int64
}

func rowGroupLayoutOf(d *dataFileFooter, df iceberg.DataFile) (*rowGroupLayout, error) {
	pf := d.pf
	n := pf.NumRowGroups()
	l := &rowGroupLayout{fileSize: d.size}
	var row int64
	for i := range n {
		rg := pf.MetaData().RowGroup(i)
		l.firstRow = append(l.firstRow, row)
		l.numRows = append(l.numRows, rg.NumRows())
		l.offset = append(l.offset, rowGroupOffset(rg))
		row += rg.NumRows()
	}
	// The reader prefers the planner's split offsets when they name
	// every row group; use the same offsets it will compare against.
	if so := df.SplitOffsets(); validOffsets(so, n, l.fileSize) {
		l.offset = so
	}
	if !validOffsets(l.offset, n, l.fileSize) {
		return nil, fmt.Errorf("data file %s: row group offsets %v are not increasing", df.FilePath(), l.offset)
	}
	return l, nil
}

// dataFileFooter is an open Parquet data file with its footer parsed, so
// that the selective reader and, when it declines, the row group layout
// share one parse.
type dataFileFooter struct {
	f    icebergio.File
	pf   *file.Reader
	size int64
}

func openDataFile(fs icebergio.IO, df iceberg.DataFile) (*dataFileFooter, error) {
	f, err := fs.Open(df.FilePath())
	if err != nil {
		return nil, fmt.Errorf("open data file %s: %w", df.FilePath(), err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("stat data file %s: %w", df.FilePath(), err)
	}
	pf, err := file.NewParquetReader(f, file.WithReadProps(pageReaderProperties()))
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("read footer of data file %s: %w", df.FilePath(), err)
	}
	// pqarrow decodes the embedded Arrow schema with an allocator of its
	// own, where a damaged message length is an allocation the process
	// cannot survive: it is checked under the cap first, as fileRows does.
	if err := checkArrowSchema(pf, cappedAllocator{inner: memory.DefaultAllocator, max: decodeCap(st.Size())}); err != nil {
		pf.Close()
		return nil, fmt.Errorf("data file %s: %w", df.FilePath(), err)
	}
	return &dataFileFooter{f: f, pf: pf, size: st.Size()}, nil
}

// Close closes the file.
func (d *dataFileFooter) Close() error {
	return d.pf.Close() // closes the file too
}

// rowGroupOffset mirrors iceberg-go's choice: the first column chunk's
// dictionary page, else its data page, else the row group's file offset.
func rowGroupOffset(rg *metadata.RowGroupMetaData) int64 {
	if rg.NumColumns() > 0 {
		if c, err := rg.ColumnChunk(0); err == nil {
			data := c.DataPageOffset()
			if c.HasDictionaryPage() {
				if d := c.DictionaryPageOffset(); d >= 0 && (data < 0 || d < data) {
					return d
				}
			}
			if data >= 0 {
				return data
			}
		}
	}
	return rg.FileOffset()
}

func validOffsets(offsets []int64, n int, size int64) bool {
	if len(offsets) != n {
		return false
	}
	for i, o := range offsets {
		if o < 0 || o >= size || (i > 0 && o <= offsets[i-1]) {
			return false
		}
	}
	return true
}

// readRowsAt reads the rows at the given sorted positions of a data file
// (no deletes applied): only those rows when the file is flat (see
// readFlatRowsAt), else the row groups that hold them. With a cache, a row
// group of which many rows are wanted is decoded whole once and kept, and
// the wanted rows taken from it (readDenseGroup). It returns the batches
// read (owned by the caller) and, per batch, the rows at the wanted
// positions, in position order whichever way each group was read: the
// order of a snapshot's records must not depend on what a gateway cached.
func readRowsAt(ctx context.Context, fs icebergio.IO, scan *table.Scan, base table.FileScanTask, positions []int64, cache rowGroups) ([]arrow.RecordBatch, [][]int32, error) {
	if len(positions) == 0 {
		return nil, nil, nil
	}
	d, err := openDataFile(fs, base.File)
	if err != nil {
		return nil, nil, err
	}
	defer d.Close()
	switch batches, err := readFlatGroupsAt(ctx, scan, d, base, positions, cache); {
	case err == nil:
		rows := make([][]int32, len(batches))
		for i, b := range batches {
			rows[i] = make([]int32, b.NumRows())
			for j := range rows[i] {
				rows[i][j] = int32(j)
			}
		}
		return batches, rows, nil
	case !errors.Is(err, errNotFlat):
		return nil, nil, err
	}
	layout, err := rowGroupLayoutOf(d, base.File)
	if err != nil {
		return nil, nil, err
	}
	return readRowGroupsAt(ctx, fs, scan, base, layout, positions)
}

// denseGroupRows decides how a row group of a flat file is read: when a
// read wants at least one of its rows per denseGroupRows on average, the
// wanted rows lie on every page of every column (a page holds thousands of
// values), so a selective read decompresses and decodes the whole group
// anyway; decoding it whole into the cache costs about the same once and
// nothing the next time. Fewer wanted rows are read selectively, touching
// only their pages.
const denseGroupRows = 256

// readFlatGroupsAt reads the rows at positions of a flat file, one batch
// per run of sparse row groups (readFlatRowsAt) and one per dense group
// (readDenseGroup), in position order; errNotFlat as readFlatRowsAt.
func readFlatGroupsAt(ctx context.Context, scan *table.Scan, d *dataFileFooter, t table.FileScanTask, positions []int64, cache rowGroups) (out []arrow.RecordBatch, err error) {
	df := t.File
	if !cache.enabled() {
		b, err := readFlatRowsAt(ctx, scan, d, df, positions)
		if err != nil {
			return nil, err
		}
		return []arrow.RecordBatch{b}, nil
	}
	defer func() {
		if err != nil {
			releaseAll(out)
			out = nil
		}
	}()
	sparseFrom := 0 // positions[sparseFrom:i] are sparse groups' rows not yet read
	flushSparse := func(to int) error {
		if to == sparseFrom {
			return nil
		}
		b, err := readFlatRowsAt(ctx, scan, d, df, positions[sparseFrom:to])
		if err != nil {
			return err
		}
		out = append(out, b)
		return nil
	}
	var first int64
	i := 0
	for g := range d.pf.NumRowGroups() {
		n := d.pf.MetaData().RowGroup(g).NumRows()
		j := i
		for j < len(positions) && positions[j] < first+n {
			j++
		}
		if k := int64(j - i); k > 0 && k*denseGroupRows >= n {
			if err := flushSparse(i); err != nil {
				return out, err
			}
			b, err := readDenseGroup(ctx, scan, d, df, g, first, dataSeq(t), positions[i:j], cache)
			if err != nil && ctx.Err() == nil {
				// Decoded whole, a group's column can be one allocation
				// over the decode cap where the selective read's are
				// not: the selective read decides whether the file is
				// damaged.
				b, err = readFlatRowsAt(ctx, scan, d, df, positions[i:j])
			}
			if err != nil {
				return out, err
			}
			out = append(out, b)
			sparseFrom = j
		}
		first += n
		i = j
	}
	if i < len(positions) {
		return out, fmt.Errorf("data file %s has no row at position %d", df.FilePath(), positions[i])
	}
	return out, flushSparse(len(positions))
}

// readRowGroupsAt is readRowsAt for files the selective reader declines:
// iceberg-go decodes every row group holding a wanted row.
func readRowGroupsAt(ctx context.Context, fs icebergio.IO, scan *table.Scan, base table.FileScanTask, layout *rowGroupLayout, positions []int64) ([]arrow.RecordBatch, [][]int32, error) {
	// Contiguous runs of wanted row groups become one ranged task each.
	type run struct{ first, last int }
	var runs []run
	for _, p := range positions {
		g := layout.groupOf(p)
		if g < 0 {
			return nil, nil, fmt.Errorf("data file %s has no row at position %d", base.File.FilePath(), p)
		}
		if n := len(runs); n > 0 && (runs[n-1].last == g || runs[n-1].last+1 == g) {
			runs[n-1].last = g
			continue
		}
		runs = append(runs, run{g, g})
	}
	tasks := make([]table.FileScanTask, len(runs))
	for i, r := range runs {
		t := base
		t.DeleteFiles, t.EqualityDeleteFiles, t.DeletionVectorFiles, t.Residual = nil, nil, nil, nil
		t.Start = layout.offset[r.first]
		end := layout.fileSize
		if r.last+1 < len(layout.offset) {
			end = layout.offset[r.last+1]
		}
		t.Length = end - t.Start
		tasks[i] = t
	}
	batches, err := readTasks(ctx, fs, scan, tasks, rowGroups{})
	if err != nil {
		return nil, nil, err
	}
	// Walk the emitted rows: each run yields all rows of its row groups.
	var want int64
	for _, r := range runs {
		for g := r.first; g <= r.last; g++ {
			want += layout.numRows[g]
		}
	}
	var got int64
	for _, b := range batches {
		got += b.NumRows()
	}
	if got != want {
		releaseAll(batches)
		return nil, nil, fmt.Errorf("data file %s: read %d rows from %d row groups holding %d", base.File.FilePath(), got, len(runs), want)
	}
	start := func(r run) int64 { return layout.firstRow[r.first] }
	end := func(r run) int64 { return layout.firstRow[r.last] + layout.numRows[r.last] }
	rows := make([][]int32, len(batches))
	ri, pi := 0, 0
	pos := start(runs[0])
	for bi, b := range batches {
		for r := range int32(b.NumRows()) {
			if pos == end(runs[ri]) {
				ri++
				pos = start(runs[ri])
			}
			for pi < len(positions) && positions[pi] < pos {
				pi++
			}
			if pi < len(positions) && positions[pi] == pos {
				rows[bi] = append(rows[bi], r)
			}
			pos++
		}
	}
	return batches, rows, nil
}

// groupOf returns the row group holding position p, or -1.
func (l *rowGroupLayout) groupOf(p int64) int {
	lo, hi := 0, len(l.firstRow)-1
	for lo <= hi {
		mid := (lo + hi) / 2
		switch {
		case p < l.firstRow[mid]:
			hi = mid - 1
		case p >= l.firstRow[mid]+l.numRows[mid]:
			lo = mid + 1
		default:
			return mid
		}
	}
	return -1
}
