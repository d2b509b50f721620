package lsm

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// Field ids of the position delete schema, fixed by the Iceberg spec.
const (
	posDeleteFilePathID = 2147483546
	posDeletePosID      = 2147483545
)

// writePositionDeletes writes one file-scoped v2 position delete file for
// the positions of one data file, as quickstart/ does: iceberg-go v0.7.0
// writes position deletes only by filter. File-scoped files (equal
// file_path bounds, referenced_data_file set) let readers apply them to
// that file only.
func writePositionDeletes(fs icebergio.WriteFileIO, spec iceberg.PartitionSpec, path, dataPath string, positions []int64) (iceberg.DataFile, int64, error) {
	positions = slices.Clone(positions)
	slices.Sort(positions)
	b := array.NewRecordBuilder(memory.DefaultAllocator, table.PositionalDeleteArrowSchema)
	defer b.Release()
	paths, ok1 := b.Field(0).(*array.StringBuilder)
	poss, ok2 := b.Field(1).(*array.Int64Builder)
	if !ok1 || !ok2 {
		return nil, 0, fmt.Errorf("position delete schema changed: %T, %T", b.Field(0), b.Field(1))
	}
	for _, p := range positions {
		paths.Append(dataPath)
		poss.Append(p)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	body, _, err := encodeParquet(rec, parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd)))
	if err != nil {
		return nil, 0, fmt.Errorf("encode position deletes for %s: %w", dataPath, err)
	}
	if err := fs.WriteFile(path, body); err != nil {
		return nil, 0, fmt.Errorf("write %s: %w", path, err)
	}
	df, err := positionDeleteDataFile(spec, path, int64(len(body)), dataPath, positions)
	return df, int64(len(body)), err
}

// positionDeleteDataFile describes a delete file with the metrics Iceberg
// Java records for position deletes.
func positionDeleteDataFile(spec iceberg.PartitionSpec, path string, size int64, dataPath string, positions []int64) (iceberg.DataFile, error) {
	n := int64(len(positions))
	b, err := iceberg.NewDataFileBuilder(spec, iceberg.EntryContentPosDeletes, path, iceberg.ParquetFile, nil, nil, nil, n, size)
	if err != nil {
		return nil, fmt.Errorf("describe %s: %w", path, err)
	}
	pathBound, err := iceberg.NewLiteral(dataPath).MarshalBinary()
	if err != nil {
		return nil, err
	}
	lo, err := iceberg.NewLiteral(positions[0]).MarshalBinary()
	if err != nil {
		return nil, err
	}
	hi, err := iceberg.NewLiteral(positions[len(positions)-1]).MarshalBinary()
	if err != nil {
		return nil, err
	}
	b.ValueCounts(map[int]int64{posDeleteFilePathID: n, posDeletePosID: n}).
		NullValueCounts(map[int]int64{posDeleteFilePathID: 0, posDeletePosID: 0}).
		LowerBoundValues(map[int][]byte{posDeleteFilePathID: pathBound, posDeletePosID: lo}).
		UpperBoundValues(map[int][]byte{posDeleteFilePathID: pathBound, posDeletePosID: hi}).
		ReferencedDataFile(dataPath)
	return b.Build(), nil
}

// positionDeleteTarget is the one data file a file-scoped position delete
// file deletes from: its referenced_data_file (a v3 manifest field), else
// its equal file_path bounds (as v2 manifests record it); "" when it is not
// file-scoped.
func positionDeleteTarget(df iceberg.DataFile) string {
	if ref := df.ReferencedDataFile(); ref != nil && *ref != "" {
		return *ref
	}
	lo, hi := df.LowerBoundValues()[posDeleteFilePathID], df.UpperBoundValues()[posDeleteFilePathID]
	if len(lo) == 0 || string(lo) != string(hi) {
		return ""
	}
	return string(lo)
}

// readPositionDeletes returns the positions a delete file deletes, by data
// file path.
func readPositionDeletes(ctx context.Context, fs icebergio.IO, path string) (map[string][]int64, error) {
	src, err := fs.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", path, err)
	}
	defer src.Close()
	pf, err := file.NewParquetReader(src)
	if err != nil {
		return nil, fmt.Errorf("parquet footer of %s: %w", path, err)
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 64 << 10}, memory.DefaultAllocator)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	rr, err := fr.GetRecordReader(ctx, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer rr.Release()
	out := map[string][]int64{}
	for rr.Next() {
		rec := rr.RecordBatch()
		if rec.NumCols() < 2 {
			return nil, fmt.Errorf("%s: %d columns, want file_path and pos", path, rec.NumCols())
		}
		paths, ok1 := rec.Column(0).(*array.String)
		poss, ok2 := rec.Column(1).(*array.Int64)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("%s: columns are %s and %s, want string and long", path, rec.Column(0).DataType(), rec.Column(1).DataType())
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			p := paths.Value(i)
			out[p] = append(out[p], poss.Value(i))
		}
	}
	if err := rr.Err(); err != nil && err != io.EOF {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return out, nil
}
