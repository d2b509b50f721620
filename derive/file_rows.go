package derive

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// fileRows reads the rows of a flat Parquet data file (see flatColumns) in
// file order from a row group on, projected onto a scan's schema with the
// calls iceberg-go's scanner makes (ArrowSchemaToIceberg,
// ToRequestedSchema). Unlike the scanner, which decodes columns in
// goroutines of its own where a decoder's panic on a damaged file ends
// the process, it decodes in the caller's goroutine (the caller recovers)
// under the decode cap (cappedAllocator): a file needs no whole-file check
// (checkFile) before it, and is decoded once.
type fileRows struct {
	ctx        context.Context
	pf         *file.Reader
	rr         pqarrow.RecordReader
	fileSchema *iceberg.Schema
	projected  *iceberg.Schema
	// ownsFile closes pf with the reader (openFileRows opened it).
	ownsFile bool
}

// openFileRows opens df for reading from the row group that holds its row
// within on, batchRows rows per batch, and returns the first row of that
// group; errNotFlat when the file is not flat.
func openFileRows(ctx context.Context, fs icebergio.IO, scan *table.Scan, df iceberg.DataFile, within int64, batchRows int) (_ *fileRows, groupRow int64, err error) {
	var (
		src icebergio.File
		pf  *file.Reader
	)
	defer func() {
		// A decoder's panic (a damaged footer, an allocation over the
		// cap) is an error naming the file; the file is closed on every
		// error.
		if p := recover(); p != nil {
			err = fmt.Errorf("data file %s is damaged: decoding it panicked: %v", df.FilePath(), p)
		}
		switch {
		case err == nil:
		case pf != nil:
			pf.Close() // closes src too
		case src != nil:
			src.Close()
		}
	}()
	if df.FileFormat() != iceberg.ParquetFile {
		return nil, 0, errNotFlat
	}
	projected, err := scan.Projection()
	if err != nil {
		return nil, 0, err
	}
	if src, err = fs.Open(df.FilePath()); err != nil {
		return nil, 0, fmt.Errorf("open data file %s: %w", df.FilePath(), err)
	}
	mem := cappedAllocator{inner: memory.DefaultAllocator, max: decodeCap(df.FileSizeBytes())}
	if pf, err = file.NewParquetReader(src, file.WithReadProps(readerPropertiesWith(cappedAllocator{inner: pageBuffers, max: mem.max}))); err != nil {
		return nil, 0, fmt.Errorf("data file %s: footer: %w", df.FilePath(), err)
	}
	if err := checkArrowSchema(pf, mem); err != nil {
		return nil, 0, fmt.Errorf("data file %s: %w", df.FilePath(), err)
	}
	// The row group holding within, and every row group's rows: a
	// damaged footer can claim fewer rows than the manifest, which no
	// decoder notices.
	var rows int64
	group := -1
	for g := range pf.NumRowGroups() {
		n := pf.MetaData().RowGroup(g).NumRows()
		if group < 0 && within < rows+n {
			group, groupRow = g, rows
		}
		rows += n
	}
	if pf.NumRows() != df.Count() || rows != df.Count() {
		return nil, 0, fmt.Errorf("data file %s: footer says %d rows (row groups %d), the manifest %d", df.FilePath(), pf.NumRows(), rows, df.Count())
	}
	if group < 0 {
		if within > 0 || rows > 0 {
			return nil, 0, fmt.Errorf("data file %s has no row %d", df.FilePath(), within)
		}
		group = pf.NumRowGroups() // an empty file: no row group to read
	}
	groups := make([]int, 0, pf.NumRowGroups()-group)
	for g := group; g < pf.NumRowGroups(); g++ {
		groups = append(groups, g)
	}
	fr, err := newFileRows(ctx, pf, df.FilePath(), projected, mem, groups, batchRows)
	if err != nil {
		return nil, 0, err
	}
	fr.ownsFile = true
	return fr, groupRow, nil
}

// newFileRows reads the given row groups of the open flat file pf (at
// path), batchRows rows per batch, decoding under mem; errNotFlat when the
// file is not flat. pf stays the caller's unless ownsFile is set.
func newFileRows(ctx context.Context, pf *file.Reader, path string, projected *iceberg.Schema, mem memory.Allocator, groups []int, batchRows int) (*fileRows, error) {
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: int64(batchRows)}, mem)
	if err != nil {
		return nil, fmt.Errorf("data file %s: schema: %w", path, err)
	}
	columns, err := flatColumns(projected, pf, fr.Manifest)
	if err != nil {
		return nil, err
	}
	cols := make([]int, len(columns))
	for i, c := range columns {
		cols[i] = c.ColIndex
	}
	rr, err := fr.GetRecordReader(ctx, cols, groups)
	if err != nil {
		return nil, fmt.Errorf("data file %s: row groups: %w", path, err)
	}
	fileSchema, err := table.ArrowSchemaToIcebergWithOptions(rr.Schema(), table.ArrowToIcebergOptions{})
	if err != nil {
		rr.Release()
		return nil, fmt.Errorf("data file %s: schema: %w", path, err)
	}
	return &fileRows{ctx: ctx, pf: pf, rr: rr, fileSchema: fileSchema, projected: projected}, nil
}

// next returns the next batch (the caller owns it), or nil at the end;
// the caller names the file in an error.
func (f *fileRows) next() (_ arrow.RecordBatch, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("damaged: decoding it panicked: %v", p)
		}
	}()
	if !f.rr.Next() {
		if err := f.rr.Err(); err != nil && !errors.Is(err, io.EOF) {
			return nil, err
		}
		return nil, nil
	}
	return table.ToRequestedSchema(f.ctx, f.projected, f.fileSchema, f.rr.RecordBatch(), table.SchemaOptions{})
}

func (f *fileRows) close() {
	f.rr.Release()
	if f.ownsFile {
		f.pf.Close()
	}
}
