package files

import (
	"bytes"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// Field ids of the position delete schema (file_path, pos), reserved by
// the Iceberg spec.
const (
	PosDeleteFilePathID = 2147483546
	PosDeletePosID      = 2147483545
)

// WritePositionDeletes writes at path one file-scoped v2 position delete
// file deleting positions of data file dataPath, and returns its manifest
// entry and size.
//
// iceberg-go v0.7.0 writes position deletes only from inside
// Transaction.Delete (by filter, not by position), and its exported
// PositionDeltaWriter needs a v3 table, so lakegw writes the Parquet file
// itself. One file per data file ("file-scoped", Iceberg Java's default
// delete granularity since 1.8) makes file_path's lower and upper bounds
// equal, which is how v2 manifests, lacking referenced_data_file, tell
// readers and iceberg-go's conflict checks which data file a delete
// targets (PositionDeleteTarget).
func WritePositionDeletes(fs icebergio.WriteFileIO, spec iceberg.PartitionSpec, path, dataPath string, positions []int64) (iceberg.DataFile, int64, error) {
	if len(positions) == 0 {
		return nil, 0, fmt.Errorf("position deletes for %s: no positions", dataPath)
	}
	positions = slices.Clone(positions)
	slices.Sort(positions) // the spec orders rows by (file_path, pos)
	body, err := encodePositionDeletes(dataPath, positions)
	if err != nil {
		return nil, 0, fmt.Errorf("encode position deletes for %s: %w", dataPath, err)
	}
	if err := fs.WriteFile(path, body); err != nil {
		return nil, 0, fmt.Errorf("write %s: %w", path, err)
	}
	df, err := positionDeleteDataFile(spec, path, int64(len(body)), dataPath, positions)
	if err != nil {
		return nil, 0, err
	}
	return df, int64(len(body)), nil
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
	// PLAIN values, as lakegw's other files (lsm's writer): a reader that
	// handles the simplest encoding reads them all.
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd), parquet.WithDictionaryDefault(false))
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
// positions are sorted and not empty.
func positionDeleteDataFile(spec iceberg.PartitionSpec, path string, size int64, dataPath string, positions []int64) (iceberg.DataFile, error) {
	n := int64(len(positions))
	b, err := iceberg.NewDataFileBuilder(spec, iceberg.EntryContentPosDeletes, path, iceberg.ParquetFile, nil, nil, nil, n, size)
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
	b.ValueCounts(map[int]int64{PosDeleteFilePathID: n, PosDeletePosID: n}).
		NullValueCounts(map[int]int64{PosDeleteFilePathID: 0, PosDeletePosID: 0}).
		LowerBoundValues(map[int][]byte{PosDeleteFilePathID: pathBound, PosDeletePosID: lowPos}).
		UpperBoundValues(map[int][]byte{PosDeleteFilePathID: pathBound, PosDeletePosID: highPos}).
		ReferencedDataFile(dataPath)
	return b.Build(), nil
}

// PositionDeleteTarget is the one data file a file-scoped position delete
// file deletes from: its referenced_data_file (a v3 manifest field), else
// its equal file_path bounds (as v2 manifests record it); "" when it is
// partition-scoped (iceberg-go's referencedDataFilePath).
func PositionDeleteTarget(df iceberg.DataFile) string {
	if ref := df.ReferencedDataFile(); ref != nil && *ref != "" {
		return *ref
	}
	lower := df.LowerBoundValues()[PosDeleteFilePathID]
	upper := df.UpperBoundValues()[PosDeleteFilePathID]
	if len(lower) == 0 || !bytes.Equal(lower, upper) {
		return ""
	}
	// A string bound is its UTF-8 bytes.
	return string(lower)
}
