package derive

import (
	"bytes"
	"context"
	"fmt"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/changelog"
	"github.com/lakegw/lakegw/lake"
)

// ReadRaw returns the records of a raw topic's partition at offsets
// [from, from+n) as produced (changelog.RawRecords), one OpInsert each in
// offset order, located by files. A gap or a row out of order is an error
// naming the file: the table was written by someone else or damaged.
func ReadRaw(ctx context.Context, tbl *table.Table, files *RawFiles, partition, partitions int32, from, n int64) (*changelog.Changes, error) {
	parts, err := files.files(tbl, partitions)
	if err != nil {
		return nil, err
	}
	if partition < 0 || partition >= int32(len(parts)) {
		return nil, fmt.Errorf("partition %d of %d", partition, len(parts))
	}
	cover, err := covering(parts[partition], from, n)
	if err != nil {
		return nil, fmt.Errorf("%s partition %d offsets %d..%d: %w", tableName(tbl), partition, from, from+n-1, err)
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, fmt.Errorf("file IO: %w", err)
	}
	r := &changelog.RawRecords{}
	b := &rawBuilder{out: r, next: from, end: from + n}
	for _, f := range cover {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		body, err := lake.ReadFile(fs, f.df.FilePath())
		if err != nil {
			return nil, err
		}
		if err := b.addFile(ctx, f.df.FilePath(), body); err != nil {
			return nil, err
		}
	}
	if b.next != b.end {
		return nil, fmt.Errorf("%s partition %d: the files for offsets %d..%d end at %d", tableName(tbl), partition, from, from+n-1, b.next)
	}
	c := &changelog.Changes{Table: tableName(tbl), Schema: changelog.RawSchema(), Raw: r, Partitions: max(partitions, 1),
		Records: make([]changelog.Record, len(r.Offsets))}
	for i := range c.Records {
		c.Records[i] = changelog.Record{Op: changelog.OpInsert, Before: changelog.NoRow,
			After: changelog.RowRef{Batch: 0, Row: int32(i)}, Partition: partition}
	}
	c.IndexPartitions()
	return c, nil
}

// rawBuilder collects the rows of [next, end) into out, copying their
// bytes into one arena so that no Arrow memory outlives a file's read.
type rawBuilder struct {
	out       *changelog.RawRecords
	next, end int64
	arena     []byte
}

// addFile decodes one data file under the decode cap, recovering a
// decoder's panic as an error naming the file.
func (b *rawBuilder) addFile(ctx context.Context, path string, body []byte) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("data file %s is damaged: decoding it panicked: %v", path, p)
		}
	}()
	mem := cappedAllocator{inner: memory.DefaultAllocator, max: decodeCap(int64(len(body)))}
	pf, err := file.NewParquetReader(bytes.NewReader(body), file.WithReadProps(nil))
	if err != nil {
		return fmt.Errorf("data file %s: %w", path, err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 4096}, mem)
	if err != nil {
		return fmt.Errorf("data file %s: %w", path, err)
	}
	tbl, err := fr.ReadTable(ctx)
	if err != nil {
		return fmt.Errorf("data file %s: %w", path, err)
	}
	defer tbl.Release()
	rdr := array.NewTableReader(tbl, 4096)
	defer rdr.Release()
	for rdr.Next() {
		if err := b.addBatch(rdr.RecordBatch()); err != nil {
			return fmt.Errorf("data file %s: %w", path, err)
		}
	}
	return rdr.Err()
}

// addBatch appends the rows of one batch that fall in [next, end).
func (b *rawBuilder) addBatch(rec arrow.RecordBatch) error {
	col := func(name string) (arrow.Array, error) {
		idx := rec.Schema().FieldIndices(name)
		if len(idx) != 1 {
			return nil, fmt.Errorf("no %q column", name)
		}
		return rec.Column(idx[0]), nil
	}
	offCol, err := col(changelog.RawOffsetColumn)
	if err != nil {
		return err
	}
	offs, ok := offCol.(*array.Int64)
	if !ok {
		return fmt.Errorf("column %q is %s, not long", changelog.RawOffsetColumn, offCol.DataType())
	}
	tsCol, err := col(changelog.RawTimestampColumn)
	if err != nil {
		return err
	}
	ts, ok := tsCol.(*array.Timestamp)
	if !ok {
		return fmt.Errorf("column %q is %s, not a timestamp", changelog.RawTimestampColumn, tsCol.DataType())
	}
	keys, err := binaryColumn(col, changelog.RawKeyColumn)
	if err != nil {
		return err
	}
	values, err := binaryColumn(col, changelog.RawValueColumn)
	if err != nil {
		return err
	}
	hdrCol, err := col(changelog.RawHeadersColumn)
	if err != nil {
		return err
	}
	headers, err := newHeaderReader(hdrCol)
	if err != nil {
		return err
	}
	for i := 0; i < int(rec.NumRows()); i++ {
		off := offs.Value(i)
		if off < b.next || off >= b.end {
			continue // a file's rows before or after the range read
		}
		if off != b.next {
			return fmt.Errorf("offset %d follows %d: the partition's offsets have a gap", off, b.next-1)
		}
		b.next++
		o := b.out
		o.Offsets = append(o.Offsets, off)
		o.Timestamps = append(o.Timestamps, int64(ts.Value(i))/1000)
		o.Keys = append(o.Keys, b.copyBytes(keys, i))
		o.Values = append(o.Values, b.copyBytes(values, i))
		hs, err := headers.row(i, b)
		if err != nil {
			return err
		}
		o.Headers = append(o.Headers, hs)
	}
	return nil
}

// binaryArray is what Binary and LargeBinary columns share.
type binaryArray interface {
	arrow.Array
	Value(i int) []byte
}

func binaryColumn(col func(string) (arrow.Array, error), name string) (binaryArray, error) {
	a, err := col(name)
	if err != nil {
		return nil, err
	}
	ba, ok := a.(binaryArray)
	if !ok {
		return nil, fmt.Errorf("column %q is %s, not binary", name, a.DataType())
	}
	return ba, nil
}

// copyBytes copies row i of a (nil when null, non-nil when empty) into the
// arena.
func (b *rawBuilder) copyBytes(a binaryArray, i int) []byte {
	if a.IsNull(i) {
		return nil
	}
	return b.keep(a.Value(i))
}

// keep copies v into the arena: a new block when it is full, so earlier
// slices stay valid.
func (b *rawBuilder) keep(v []byte) []byte {
	if len(v) == 0 {
		return []byte{} // present and empty, not null
	}
	if cap(b.arena)-len(b.arena) < len(v) {
		b.arena = make([]byte, 0, max(64<<10, len(v)))
	}
	start := len(b.arena)
	b.arena = append(b.arena, v...)
	b.out.Bytes += int64(len(v))
	return b.arena[start:len(b.arena):len(b.arena)]
}

// headerReader reads the headers column: a list of structs of a string
// key and a binary value.
type headerReader struct {
	list    array.ListLike
	keys    interface{ Value(int) string }
	values  binaryArray
	keyNull arrow.Array
}

func newHeaderReader(a arrow.Array) (*headerReader, error) {
	list, ok := a.(array.ListLike)
	if !ok {
		return nil, fmt.Errorf("column %q is %s, not a list", changelog.RawHeadersColumn, a.DataType())
	}
	st, ok := list.ListValues().(*array.Struct)
	if !ok || st.NumField() != 2 {
		return nil, fmt.Errorf("column %q holds %s, not a struct of key and value", changelog.RawHeadersColumn, list.ListValues().DataType())
	}
	keys, ok := st.Field(0).(interface {
		arrow.Array
		Value(int) string
	})
	if !ok {
		return nil, fmt.Errorf("header keys are %s, not strings", st.Field(0).DataType())
	}
	values, ok := st.Field(1).(binaryArray)
	if !ok {
		return nil, fmt.Errorf("header values are %s, not binary", st.Field(1).DataType())
	}
	return &headerReader{list: list, keys: keys, values: values, keyNull: keys}, nil
}

func (h *headerReader) row(i int, b *rawBuilder) ([]changelog.RawHeader, error) {
	if h.list.IsNull(i) {
		return nil, nil
	}
	start, end := h.list.ValueOffsets(i)
	if start == end {
		return nil, nil
	}
	out := make([]changelog.RawHeader, 0, end-start)
	for j := int(start); j < int(end); j++ {
		if h.keyNull.IsNull(j) {
			return nil, fmt.Errorf("a header of row %d has a null key", i)
		}
		k := strings.Clone(h.keys.Value(j)) // not a view of Arrow memory
		b.out.Bytes += int64(len(k)) + 40
		out = append(out, changelog.RawHeader{Key: k, Value: b.copyBytes(h.values, j)})
	}
	return out, nil
}
