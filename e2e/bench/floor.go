package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// decodeFloor decodes every column of every data file with arrow-go's
// Parquet reader (the one iceberg-go uses), one file after another, single
// goroutine: no deletes applied, no JSON, no Kafka. Records are the data
// files' rows; bytes are the Parquet files' sizes.
func decodeFloor(ctx context.Context, files []fileInfo) (consumeResult, error) {
	var res consumeResult
	start := time.Now()
	for _, f := range files {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		path := strings.TrimPrefix(f.Path, "file://")
		r, err := file.OpenParquetFile(path, false)
		if err != nil {
			return res, fmt.Errorf("open %s: %w", path, err)
		}
		fr, err := pqarrow.NewFileReader(r, pqarrow.ArrowReadProperties{BatchSize: 64 << 10}, memory.DefaultAllocator)
		if err != nil {
			r.Close()
			return res, err
		}
		rr, err := fr.GetRecordReader(ctx, nil, nil)
		if err != nil {
			r.Close()
			return res, err
		}
		for rr.Next() {
			res.Records += rr.RecordBatch().NumRows()
		}
		err = rr.Err()
		rr.Release()
		r.Close()
		if err != nil {
			return res, fmt.Errorf("decode %s: %w", path, err)
		}
		res.Bytes += f.Size
	}
	res.Elapsed = time.Since(start)
	return res, nil
}
