package lsm

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// The sequence column of sorted runs: the sequence number of the commit
// that wrote each row's current image. It is stored under a field id that
// no table schema assigns, so Iceberg readers (which project by field id)
// never see it; lakegw reads it to order images of a key.
const (
	seqColumn  = "_lakegw_seq"
	seqFieldID = 2147480000
)

// runRowGroupRows bounds a row group: smaller groups make row-group
// statistics and bloom filters prune point lookups more finely.
const runRowGroupRows = 64 << 10

// runSchemas returns the Arrow schema of a sorted run file (table columns
// then the sequence column) and the Iceberg schema describing it for
// statistics.
func runSchemas(sp *spec) (*arrow.Schema, *iceberg.Schema, error) {
	sc, err := table.SchemaToArrowSchema(sp.schema, nil, true, false)
	if err != nil {
		return nil, nil, fmt.Errorf("arrow schema: %w", err)
	}
	fields := append(sc.Fields(), arrow.Field{Name: seqColumn, Type: arrow.PrimitiveTypes.Int64,
		Metadata: arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{strconv.Itoa(seqFieldID)})})
	ifields := append(sp.schema.Fields(), iceberg.NestedField{ID: seqFieldID, Name: seqColumn, Type: iceberg.PrimitiveTypes.Int64, Required: true})
	isc := iceberg.NewSchemaWithIdentifiers(sp.schema.ID, sp.keyIDs, ifields...)
	return arrow.NewSchema(fields, nil), isc, nil
}

// writerProps: zstd (parquet-go's LZ4_RAW corrupts pages, see DESIGN.md),
// bloom filters on the key columns for point lookups.
// ndv sizes the bloom filters (rows per row group, at most): parquet-go
// otherwise sizes them for a million values, 1 MiB per column and file.
func writerProps(sp *spec, bloomKeys bool, ndv int) *parquet.WriterProperties {
	opts := []parquet.WriterProperty{
		parquet.WithCompression(compress.Codecs.Zstd),
		parquet.WithMaxRowGroupLength(runRowGroupRows),
		parquet.WithStats(true),
	}
	if bloomKeys {
		for _, i := range sp.keyIdx {
			opts = append(opts, parquet.WithBloomFilterEnabledFor(sp.names[i], true), parquet.WithBloomFilterFPPFor(sp.names[i], 0.01),
				parquet.WithBloomFilterNDVFor(sp.names[i], int64(max(min(ndv, runRowGroupRows), 16))))
		}
	}
	return parquet.NewWriterProperties(opts...)
}

// encodeParquet writes one batch as a Parquet file body.
func encodeParquet(rec arrow.RecordBatch, props *parquet.WriterProperties) ([]byte, *pqarrow.FileWriter, error) {
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(rec.Schema(), &buf, props, pqarrow.DefaultWriterProps())
	if err != nil {
		return nil, nil, err
	}
	if err := w.Write(rec); err != nil {
		return nil, nil, err
	}
	if err := w.Close(); err != nil {
		return nil, nil, err
	}
	return buf.Bytes(), w, nil
}

// writeRun writes rows (sorted by key, one per key) with their sequence
// numbers as a sorted run file at path and describes it for the manifest,
// with exact bounds on the key columns (they prune lookups).
func writeRun(fs icebergio.WriteFileIO, tbl *table.Table, sp *spec, path string, rows []Row, seqs []int64) (iceberg.DataFile, int64, error) {
	asc, isc, err := runSchemas(sp)
	if err != nil {
		return nil, 0, err
	}
	n := len(sp.names)
	rec, err := buildRecord(asc, 0, rows, func(b *array.RecordBuilder, row int) error {
		b.Field(n).(*array.Int64Builder).Append(seqs[row])
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	defer rec.Release()
	body, w, err := encodeParquet(rec, writerProps(sp, true, len(rows)))
	if err != nil {
		return nil, 0, fmt.Errorf("encode %s: %w", path, err)
	}
	if err := fs.WriteFile(path, body); err != nil {
		return nil, 0, fmt.Errorf("write %s: %w", path, err)
	}
	meta, err := w.FileMetadata()
	if err != nil {
		return nil, 0, fmt.Errorf("metadata of %s: %w", path, err)
	}
	props := iceberg.Properties{"write.metadata.metrics.column." + seqColumn: "none"}
	for k, v := range tbl.Properties() {
		props[k] = v
	}
	for _, i := range sp.keyIdx {
		props["write.metadata.metrics.column."+sp.names[i]] = "full"
	}
	df, err := table.DataFileFromMetadata(table.DataFileArgs{
		Schema: isc, Spec: tbl.Spec(), Format: iceberg.ParquetFile, Metadata: meta,
		FilePath: path, FileSize: int64(len(body)), Content: iceberg.EntryContentData,
		Properties: props, FormatVersion: tbl.Metadata().Version(),
	})
	if err != nil {
		return nil, 0, fmt.Errorf("describe %s: %w", path, err)
	}
	return df, int64(len(body)), nil
}
