package lsm

import (
	"context"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	icebergio "github.com/apache/iceberg-go/io"
)

// pqReadBatch is the Arrow batch size lakegw reads its Parquet files in.
const pqReadBatch = 64 << 10

// parquetFile is a Parquet file of the table's FileIO, open with arrow-go
// (the reader iceberg-go uses): the footer is parsed, nothing else read.
type parquetFile struct {
	*file.Reader
	path string
	src  icebergio.File
}

// openParquet opens path and parses its footer. Close it.
func openParquet(fs icebergio.IO, path string) (*parquetFile, error) {
	src, err := fs.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	pf, err := file.NewParquetReader(src)
	if err != nil {
		src.Close()
		return nil, fmt.Errorf("parquet footer of %s: %w", path, err)
	}
	return &parquetFile{Reader: pf, path: path, src: src}, nil
}

// Close closes the reader and the file.
func (f *parquetFile) Close() error {
	err := f.Reader.Close()
	if cerr := f.src.Close(); err == nil {
		err = cerr
	}
	return err
}

// eachRecord decodes the whole file as Arrow batches, in file order, and
// hands each to fn (the batch is released after fn returns).
func (f *parquetFile) eachRecord(ctx context.Context, fn func(rec arrow.RecordBatch) error) error {
	fr, err := pqarrow.NewFileReader(f.Reader, pqarrow.ArrowReadProperties{BatchSize: pqReadBatch}, memory.DefaultAllocator)
	if err != nil {
		return fmt.Errorf("read %s: %w", f.path, err)
	}
	rr, err := fr.GetRecordReader(ctx, nil, nil)
	if err != nil {
		return fmt.Errorf("read %s: %w", f.path, err)
	}
	defer rr.Release()
	for rr.Next() {
		if err := fn(rr.RecordBatch()); err != nil {
			return err
		}
	}
	if err := rr.Err(); err != nil && err != io.EOF {
		return fmt.Errorf("read %s: %w", f.path, err)
	}
	return nil
}
