package derive

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// errNotFlat declines a file the selective reader does not handle; the
// caller falls back to decoding the row groups through iceberg-go.
var errNotFlat = errors.New("not a flat file of plain columns")

// readFlatRowsAt reads the rows at the given sorted, distinct positions of
// a Parquet data file, materialising only those rows: every projected
// column is read with a column chunk reader that skips (discards without
// decoding into Arrow) the rows between them. The rows are then projected
// onto the scan's schema with the same calls iceberg-go's scanner makes
// (the file's Arrow schema as pqarrow derives it, ArrowSchemaToIceberg,
// ToRequestedSchema), so schema evolution, type promotion and defaults of
// added columns come out as a scan's.
//
// It handles files whose projected columns are top-level primitives that
// pqarrow maps to Arrow by a plain value copy (see leafKind) and that carry
// field ids; anything else returns errNotFlat before reading any data.
func readFlatRowsAt(ctx context.Context, scan *table.Scan, d *dataFileFooter, df iceberg.DataFile, positions []int64) (arrow.RecordBatch, error) {
	if df.FileFormat() != iceberg.ParquetFile {
		return nil, errNotFlat
	}
	projected, err := scan.Projection()
	if err != nil {
		return nil, err
	}
	mem := compute.GetAllocator(ctx)
	pf := d.pf
	// The reader is only asked for its schema manifest: the Arrow type
	// pqarrow gives each column, as in iceberg-go's reader.
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, mem)
	if err != nil {
		return nil, fmt.Errorf("data file %s: schema: %w", df.FilePath(), err)
	}
	man := fr.Manifest
	columns, err := flatColumns(projected, pf, man)
	if err != nil {
		return nil, err
	}
	var (
		fields []arrow.Field
		leaves []*flatLeaf
	)
	defer func() {
		for _, l := range leaves {
			l.b.Release()
		}
	}()
	for _, fld := range columns {
		descr := pf.MetaData().Schema.Column(fld.ColIndex)
		l, ok := newFlatLeaf(mem, fld.ColIndex, *fld.Field, descr.PhysicalType(), int16(descr.MaxDefinitionLevel()))
		if !ok {
			return nil, errNotFlat
		}
		l.b.Reserve(len(positions))
		fields = append(fields, *fld.Field)
		leaves = append(leaves, l)
	}
	var meta arrow.Metadata
	if man.SchemaMeta != nil {
		meta = *man.SchemaMeta
	}
	fileArrow := arrow.NewSchema(fields, &meta)
	fileSchema, err := table.ArrowSchemaToIcebergWithOptions(fileArrow, table.ArrowToIcebergOptions{})
	if err != nil {
		return nil, fmt.Errorf("data file %s: schema: %w", df.FilePath(), err)
	}

	// Positions by row group, as runs of consecutive rows.
	var first int64
	pi := 0
	var runs []posRun
	for g := range pf.NumRowGroups() {
		n := pf.MetaData().RowGroup(g).NumRows()
		runs = runs[:0]
		for pi < len(positions) && positions[pi] < first+n {
			p := positions[pi] - first
			if p < 0 {
				return nil, fmt.Errorf("data file %s: positions not sorted", df.FilePath())
			}
			if k := len(runs); k > 0 && runs[k-1].start+runs[k-1].n == p {
				runs[k-1].n++
			} else {
				runs = append(runs, posRun{p, 1})
			}
			pi++
		}
		first += n
		if len(runs) == 0 {
			continue
		}
		rg := pf.RowGroup(g)
		for _, l := range leaves {
			cr, err := rg.Column(l.col)
			if err != nil {
				return nil, fmt.Errorf("data file %s, row group %d, column %s: %w", df.FilePath(), g, l.field.Name, err)
			}
			err = l.read(cr, runs)
			cr.Close()
			if err != nil {
				return nil, fmt.Errorf("data file %s, row group %d, column %s: %w", df.FilePath(), g, l.field.Name, err)
			}
		}
	}
	if pi < len(positions) {
		return nil, fmt.Errorf("data file %s has no row at position %d", df.FilePath(), positions[pi])
	}
	cols := make([]arrow.Array, len(leaves))
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for i, l := range leaves {
		cols[i] = l.b.NewArray()
		if cols[i].Len() != len(positions) {
			return nil, fmt.Errorf("data file %s, column %s: read %d of %d rows", df.FilePath(), l.field.Name, cols[i].Len(), len(positions))
		}
	}
	raw := array.NewRecordBatch(fileArrow, cols, int64(len(positions)))
	defer raw.Release()
	out, err := table.ToRequestedSchema(ctx, projected, fileSchema, raw, table.SchemaOptions{})
	if err != nil {
		return nil, fmt.Errorf("data file %s: %w", df.FilePath(), err)
	}
	return out, nil
}

// flatColumns returns the leaf columns of pf that hold a field of
// projected, in file order, when every projected field is a primitive
// (flatType) and every such column a top-level one of at most one
// definition level, in a file whose columns carry field ids; errNotFlat
// otherwise (iceberg-go's reader then decodes it).
func flatColumns(projected *iceberg.Schema, pf *file.Reader, man *pqarrow.SchemaManifest) ([]pqarrow.SchemaField, error) {
	want := map[int]struct{}{}
	for _, f := range projected.Fields() {
		if !flatType(f.Type) || f.ID == iceberg.RowIDFieldID || f.ID == iceberg.LastUpdatedSequenceNumberFieldID {
			return nil, errNotFlat
		}
		want[f.ID] = struct{}{}
	}
	sc := pf.MetaData().Schema
	// Every leaf with a projected field id must be a top-level column.
	leafTop := make([]bool, sc.NumColumns())
	for _, fld := range man.Fields {
		if fld.IsLeaf() {
			leafTop[fld.ColIndex] = true
		}
	}
	for i := range sc.NumColumns() {
		id := int(sc.Column(i).SchemaNode().FieldID())
		if id < 0 {
			return nil, errNotFlat // name-mapped file: leave it to iceberg-go
		}
		if _, ok := want[id]; ok && !leafTop[i] {
			return nil, errNotFlat
		}
	}
	var cols []pqarrow.SchemaField
	for _, fld := range man.Fields {
		if !fld.IsLeaf() {
			continue
		}
		descr := sc.Column(fld.ColIndex)
		if _, ok := want[int(descr.SchemaNode().FieldID())]; !ok {
			continue
		}
		if descr.MaxRepetitionLevel() != 0 || descr.MaxDefinitionLevel() > 1 {
			return nil, errNotFlat
		}
		cols = append(cols, fld)
	}
	if len(cols) == 0 {
		// No projected column in the file (all added later): the row
		// count alone would do, but that is iceberg-go's business.
		return nil, errNotFlat
	}
	return cols, nil
}

// flatType reports whether an Iceberg type is a primitive whose Parquet
// columns the selective reader can copy into Arrow itself.
func flatType(t iceberg.Type) bool {
	switch t.(type) {
	case iceberg.BooleanType, iceberg.Int32Type, iceberg.Int64Type, iceberg.Float32Type, iceberg.Float64Type,
		iceberg.DateType, iceberg.TimeType, iceberg.TimestampType, iceberg.TimestampTzType,
		iceberg.TimestampNsType, iceberg.TimestampTzNsType, iceberg.StringType, iceberg.BinaryType,
		iceberg.FixedType, iceberg.DecimalType:
		return true
	}
	return false
}

type posRun struct{ start, n int64 }

// flatLeaf reads one top-level primitive column into an Arrow builder.
type flatLeaf struct {
	col   int
	field arrow.Field
	b     array.Builder
	read  func(file.ColumnChunkReader, []posRun) error
}

// newFlatLeaf pairs the column's physical type with the Arrow type pqarrow
// gives it, for the pairs pqarrow converts by copying each value as is
// (transferZeroCopy, transferInt for same-width types, transferBinary,
// transferDecimalInteger/Bytes into decimal128). Others are declined.
func newFlatLeaf(mem memory.Allocator, col int, field arrow.Field, phys parquet.Type, maxDef int16) (*flatLeaf, bool) {
	l := &flatLeaf{col: col, field: field}
	dt := field.Type
	id := dt.ID()
	switch {
	case phys == parquet.Types.Boolean && id == arrow.BOOL:
		b := array.NewBooleanBuilder(mem)
		l.b, l.read = b, leafReader[bool, *file.BooleanColumnChunkReader](maxDef, b.Append, b.AppendNull)
	case phys == parquet.Types.Int32 && id == arrow.INT32:
		b := array.NewInt32Builder(mem)
		l.b, l.read = b, leafReader[int32, *file.Int32ColumnChunkReader](maxDef, b.Append, b.AppendNull)
	case phys == parquet.Types.Int32 && id == arrow.DATE32:
		b := array.NewDate32Builder(mem)
		l.b, l.read = b, leafReader[int32, *file.Int32ColumnChunkReader](maxDef, func(v int32) { b.Append(arrow.Date32(v)) }, b.AppendNull)
	case phys == parquet.Types.Int32 && id == arrow.TIME32:
		b := array.NewTime32Builder(mem, dt.(*arrow.Time32Type))
		l.b, l.read = b, leafReader[int32, *file.Int32ColumnChunkReader](maxDef, func(v int32) { b.Append(arrow.Time32(v)) }, b.AppendNull)
	case phys == parquet.Types.Int64 && id == arrow.INT64:
		b := array.NewInt64Builder(mem)
		l.b, l.read = b, leafReader[int64, *file.Int64ColumnChunkReader](maxDef, b.Append, b.AppendNull)
	case phys == parquet.Types.Int64 && id == arrow.TIME64:
		b := array.NewTime64Builder(mem, dt.(*arrow.Time64Type))
		l.b, l.read = b, leafReader[int64, *file.Int64ColumnChunkReader](maxDef, func(v int64) { b.Append(arrow.Time64(v)) }, b.AppendNull)
	case phys == parquet.Types.Int64 && id == arrow.TIMESTAMP && dt.(*arrow.TimestampType).Unit != arrow.Second:
		b := array.NewTimestampBuilder(mem, dt.(*arrow.TimestampType))
		l.b, l.read = b, leafReader[int64, *file.Int64ColumnChunkReader](maxDef, func(v int64) { b.Append(arrow.Timestamp(v)) }, b.AppendNull)
	case phys == parquet.Types.Float && id == arrow.FLOAT32:
		b := array.NewFloat32Builder(mem)
		l.b, l.read = b, leafReader[float32, *file.Float32ColumnChunkReader](maxDef, b.Append, b.AppendNull)
	case phys == parquet.Types.Double && id == arrow.FLOAT64:
		b := array.NewFloat64Builder(mem)
		l.b, l.read = b, leafReader[float64, *file.Float64ColumnChunkReader](maxDef, b.Append, b.AppendNull)
	case phys == parquet.Types.ByteArray && (id == arrow.STRING || id == arrow.BINARY || id == arrow.LARGE_STRING || id == arrow.LARGE_BINARY):
		b := array.NewBuilder(mem, dt)
		var put func([]byte)
		switch bb := b.(type) {
		case *array.StringBuilder:
			put = bb.BinaryBuilder.Append
		case *array.LargeStringBuilder:
			put = bb.BinaryBuilder.Append
		case *array.BinaryBuilder:
			put = bb.Append
		default:
			b.Release()
			return nil, false
		}
		l.b, l.read = b, leafReader[parquet.ByteArray, *file.ByteArrayColumnChunkReader](maxDef, func(v parquet.ByteArray) { put(v) }, b.AppendNull)
	case phys == parquet.Types.FixedLenByteArray && id == arrow.FIXED_SIZE_BINARY:
		b := array.NewFixedSizeBinaryBuilder(mem, dt.(*arrow.FixedSizeBinaryType))
		l.b, l.read = b, leafReader[parquet.FixedLenByteArray, *file.FixedLenByteArrayColumnChunkReader](maxDef, func(v parquet.FixedLenByteArray) { b.Append(v) }, b.AppendNull)
	case id == arrow.DECIMAL128:
		b := array.NewDecimal128Builder(mem, dt.(*arrow.Decimal128Type))
		switch phys {
		case parquet.Types.Int32:
			l.read = leafReader[int32, *file.Int32ColumnChunkReader](maxDef, func(v int32) { b.Append(decimal128.FromI64(int64(v))) }, b.AppendNull)
		case parquet.Types.Int64:
			l.read = leafReader[int64, *file.Int64ColumnChunkReader](maxDef, func(v int64) { b.Append(decimal128.FromI64(v)) }, b.AppendNull)
		case parquet.Types.FixedLenByteArray:
			l.read = decimalBytesReader[parquet.FixedLenByteArray, *file.FixedLenByteArrayColumnChunkReader](maxDef, b)
		case parquet.Types.ByteArray:
			l.read = decimalBytesReader[parquet.ByteArray, *file.ByteArrayColumnChunkReader](maxDef, b)
		default:
			b.Release()
			return nil, false
		}
		l.b = b
	default:
		return nil, false
	}
	return l, true
}

// chunkReader is the part of arrow-go's typed column chunk readers used.
type chunkReader[T any] interface {
	Skip(int64) (int64, error)
	ReadBatchInPage(batchSize int64, values []T, defLvls, repLvls []int16) (int64, int, error)
	Err() error
}

const (
	leafBatch = 1024
	// maxSkipGap is the widest gap between wanted rows that is decoded
	// (into a reused slice, not into Arrow) rather than skipped: each
	// read call costs arrow-go a 4 KiB index buffer for dictionary pages,
	// decoding a few rows is cheaper.
	maxSkipGap = 256
)

// leafReader returns a reader of the runs of one column chunk: wide gaps
// between runs are skipped, narrow ones decoded and dropped, the rows of
// each run appended (a value is appended before the next page is read, so
// byte arrays that alias the page are copied while valid).
func leafReader[T any, R chunkReader[T]](maxDef int16, put func(T), null func()) func(file.ColumnChunkReader, []posRun) error {
	var (
		vals []T
		defs []int16
	)
	return func(c file.ColumnChunkReader, runs []posRun) error {
		cr, ok := c.(R)
		if !ok {
			return fmt.Errorf("unexpected column reader %T", c)
		}
		if vals == nil {
			vals = make([]T, leafBatch)
			if maxDef > 0 {
				defs = make([]int16, leafBatch)
			}
		}
		var at int64 // next row of the chunk reader
		for ri := 0; ri < len(runs); {
			// A span of runs separated by narrow gaps is read in one go.
			rj := ri + 1
			for rj < len(runs) && runs[rj].start-(runs[rj-1].start+runs[rj-1].n) <= maxSkipGap {
				rj++
			}
			start, end := runs[ri].start, runs[rj-1].start+runs[rj-1].n
			if gap := start - at; gap > 0 {
				if _, err := cr.Skip(gap); err != nil {
					return err
				}
			}
			row, k := start, ri // k: the run at or after row
			for row < end {
				want := min(end-row, leafBatch)
				var d []int16
				if maxDef > 0 {
					d = defs[:want]
				}
				lvls, nv, err := cr.ReadBatchInPage(want, vals[:want], d, nil)
				if err != nil {
					return err
				}
				if lvls == 0 {
					if err := cr.Err(); err != nil {
						return err
					}
					return fmt.Errorf("column chunk ended %d rows early", end-row)
				}
				vi := 0
				for i := range lvls {
					r := row + i
					for k < rj && r >= runs[k].start+runs[k].n {
						k++
					}
					wanted := k < rj && r >= runs[k].start
					defined := maxDef == 0 || d[i] == maxDef
					switch {
					case wanted && defined:
						put(vals[vi])
					case wanted:
						null()
					}
					if defined {
						vi++
					}
				}
				if vi != nv {
					return fmt.Errorf("read %d values for %d defined levels", nv, vi)
				}
				row += lvls
			}
			at, ri = end, rj
		}
		return nil
	}
}

// decimalBytesReader reads big-endian two's complement decimals into
// decimal128, as pqarrow's transferDecimalBytes does.
func decimalBytesReader[T ~[]byte, R chunkReader[T]](maxDef int16, b *array.Decimal128Builder) func(file.ColumnChunkReader, []posRun) error {
	var bad error
	read := leafReader[T, R](maxDef, func(v T) {
		n, err := bigEndianDecimal128(v)
		if err != nil && bad == nil {
			bad = err
		}
		b.Append(n)
	}, b.AppendNull)
	return func(c file.ColumnChunkReader, runs []posRun) error {
		if err := read(c, runs); err != nil {
			return err
		}
		return bad
	}
}

func bigEndianDecimal128(buf []byte) (decimal128.Num, error) {
	if len(buf) < 1 || len(buf) > 16 {
		return decimal128.Num{}, fmt.Errorf("decimal of %d bytes", len(buf))
	}
	var full [16]byte
	if int8(buf[0]) < 0 {
		for i := range full {
			full[i] = 0xff
		}
	}
	copy(full[16-len(buf):], buf)
	var hi, lo uint64
	for i := range 8 {
		hi = hi<<8 | uint64(full[i])
		lo = lo<<8 | uint64(full[8+i])
	}
	return decimal128.New(int64(hi), lo), nil
}
