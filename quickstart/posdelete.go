package quickstart

import (
	"bytes"
	"fmt"
	"maps"
	"slices"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"
)

// Field ids of the position delete schema (file_path, pos), fixed by the
// Iceberg spec.
const (
	posDeleteFilePathID = 2147483546
	posDeletePosID      = 2147483545
)

// writePositionDeletes writes one v2 position delete file per data file in
// targets (data file path -> positions to delete) and returns them ready for
// RowDelta.AddDeletes, with the paths written so a failed commit can remove
// them.
//
// iceberg-go v0.7.0 writes position deletes only from inside
// Transaction.Delete (by filter, not by position), and its exported
// PositionDeltaWriter needs a v3 table, so the demo writes the Parquet file
// itself. One file per data file ("file-scoped", Iceberg Java's default
// delete granularity since 1.8) makes file_path's lower and upper bounds
// equal, which is how v2 manifests, lacking referenced_data_file, tell
// readers and iceberg-go's conflict checks which data file a delete targets.
func writePositionDeletes(tbl *table.Table, fs icebergio.WriteFileIO, targets map[string][]int64) ([]iceberg.DataFile, []string, error) {
	locs, err := tbl.LocationProvider()
	if err != nil {
		return nil, nil, fmt.Errorf("location provider: %w", err)
	}
	var (
		files   []iceberg.DataFile
		written []string
	)
	for _, dataPath := range slices.Sorted(maps.Keys(targets)) {
		positions := slices.Clone(targets[dataPath])
		slices.Sort(positions) // the spec requires rows sorted by file_path, pos

		body, err := encodePositionDeletes(dataPath, positions)
		if err != nil {
			return nil, written, fmt.Errorf("encode position deletes for %s: %w", dataPath, err)
		}
		path := locs.NewDataLocation(fmt.Sprintf("%s-deletes.parquet", uuid.NewString()))
		if err := fs.WriteFile(path, body); err != nil {
			return nil, written, fmt.Errorf("write %s: %w", path, err)
		}
		written = append(written, path)

		df, err := positionDeleteDataFile(tbl.Spec(), path, int64(len(body)), dataPath, positions)
		if err != nil {
			return nil, written, err
		}
		files = append(files, df)
	}
	return files, written, nil
}

// encodePositionDeletes renders the Parquet body of a position delete file.
// table.PositionalDeleteArrowSchema carries the reserved field ids, which
// pqarrow writes into the Parquet schema where readers match on them.
func encodePositionDeletes(dataPath string, positions []int64) ([]byte, error) {
	b := array.NewRecordBuilder(memory.DefaultAllocator, table.PositionalDeleteArrowSchema)
	defer b.Release()
	paths, ok := b.Field(0).(*array.StringBuilder)
	if !ok {
		return nil, fmt.Errorf("file_path builder is %T", b.Field(0))
	}
	poss, ok := b.Field(1).(*array.Int64Builder)
	if !ok {
		return nil, fmt.Errorf("pos builder is %T", b.Field(1))
	}
	for _, p := range positions {
		paths.Append(dataPath)
		poss.Append(p)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()

	var buf bytes.Buffer
	// zstd, as iceberg-go writes data files; see DESIGN.md for why not LZ4.
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd))
	w, err := pqarrow.NewFileWriter(table.PositionalDeleteArrowSchema, &buf, props, pqarrow.DefaultWriterProps())
	if err != nil {
		return nil, err
	}
	if err := w.Write(rec); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// positionDeleteDataFile describes a written delete file for the manifest.
// The column metrics are what Iceberg Java records for position deletes;
// readers use the file_path bounds to prune delete files per data file.
func positionDeleteDataFile(spec iceberg.PartitionSpec, path string, size int64, dataPath string, positions []int64) (iceberg.DataFile, error) {
	n := int64(len(positions))
	b, err := iceberg.NewDataFileBuilder(spec, iceberg.EntryContentPosDeletes, path, iceberg.ParquetFile,
		nil, nil, nil, n, size)
	if err != nil {
		return nil, fmt.Errorf("describe %s: %w", path, err)
	}
	pathBound, err := iceberg.NewLiteral(dataPath).MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("bound of %s: %w", path, err)
	}
	lowPos, err := iceberg.NewLiteral(positions[0]).MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("bound of %s: %w", path, err)
	}
	highPos, err := iceberg.NewLiteral(positions[len(positions)-1]).MarshalBinary()
	if err != nil {
		return nil, fmt.Errorf("bound of %s: %w", path, err)
	}
	b.ValueCounts(map[int]int64{posDeleteFilePathID: n, posDeletePosID: n}).
		NullValueCounts(map[int]int64{posDeleteFilePathID: 0, posDeletePosID: 0}).
		LowerBoundValues(map[int][]byte{posDeleteFilePathID: pathBound, posDeletePosID: lowPos}).
		UpperBoundValues(map[int][]byte{posDeleteFilePathID: pathBound, posDeletePosID: highPos}).
		ReferencedDataFile(dataPath)
	return b.Build(), nil
}
