package lsm

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"

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

// runSchema is the Iceberg schema describing a sorted run file (table
// columns then the sequence column), for its manifest metrics.
func runSchema(sp *spec) *iceberg.Schema {
	ifields := append(sp.schema.Fields(), iceberg.NestedField{ID: seqFieldID, Name: seqColumn, Type: iceberg.PrimitiveTypes.Int64, Required: true})
	return iceberg.NewSchemaWithIdentifiers(sp.schema.ID, sp.keyIDs, ifields...)
}

// runColumns are the Parquet columns of a sorted run file: the table
// columns, bloom filters on the key, then the sequence column.
func runColumns(sp *spec) []pqCol {
	return append(tableColumns(sp, true), pqCol{name: seqColumn, id: seqFieldID, kind: kInt64, required: true})
}

// writeRun writes rows (sorted by key, one per key) with their sequence
// numbers as a sorted run file at path and describes it for the manifest,
// with exact bounds on the key columns (they prune lookups).
func writeRun(fs icebergio.WriteFileIO, tbl *table.Table, sp *spec, path string, rows []Row, seqs []int64) (iceberg.DataFile, int64, error) {
	n := len(sp.names)
	body, err := encodeRows(runColumns(sp), len(rows), runRowGroupRows, func(r, c int) any {
		if c == n {
			return seqs[r]
		}
		return rows[r][c]
	})
	if err != nil {
		return nil, 0, fmt.Errorf("encode %s: %w", path, err)
	}
	if err := fs.WriteFile(path, body); err != nil {
		return nil, 0, fmt.Errorf("write %s: %w", path, err)
	}
	meta, err := footer(body)
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
		Schema: runSchema(sp), Spec: tbl.Spec(), Format: iceberg.ParquetFile, Metadata: meta,
		FilePath: path, FileSize: int64(len(body)), Content: iceberg.EntryContentData,
		Properties: props, FormatVersion: tbl.Metadata().Version(),
	})
	if err != nil {
		return nil, 0, fmt.Errorf("describe %s: %w", path, err)
	}
	if df, err = signedZeroBounds(df, sp, tbl.Spec()); err != nil {
		return nil, 0, fmt.Errorf("describe %s: %w", path, err)
	}
	return df, int64(len(body)), nil
}

// signedZeroBounds applies to the manifest bounds of float and double
// columns the rule of the Parquet spec that parquet-go's statistics do not
// follow (it compares with <, so a chunk of -0.0 then +0.0 gets the max
// -0.0, which would prune +0.0): a zero lower bound is -0.0 and a zero
// upper bound +0.0. pqarrow writes its statistics so, and key bounds of
// float keys prune lookups (state.go). The DataFile is rebuilt only when
// a bound changes.
func signedZeroBounds(df iceberg.DataFile, sp *spec, ps iceberg.PartitionSpec) (iceberg.DataFile, error) {
	lower, upper := df.LowerBoundValues(), df.UpperBoundValues()
	changed := false
	fix := func(m map[int][]byte, id int, k kind, neg bool) {
		b, ok := m[id]
		if !ok {
			return
		}
		var want []byte
		switch {
		case k == kFloat32 && len(b) == 4 && math.Float32frombits(binary.LittleEndian.Uint32(b)) == 0:
			want = binary.LittleEndian.AppendUint32(nil, math.Float32bits(float32(math.Copysign(0, map[bool]float64{true: -1, false: 1}[neg]))))
		case k == kFloat64 && len(b) == 8 && math.Float64frombits(binary.LittleEndian.Uint64(b)) == 0:
			want = binary.LittleEndian.AppendUint64(nil, math.Float64bits(math.Copysign(0, map[bool]float64{true: -1, false: 1}[neg])))
		default:
			return
		}
		if !bytes.Equal(b, want) {
			m[id], changed = want, true
		}
	}
	for i, f := range sp.schema.Fields() {
		if k := sp.kinds[i]; k == kFloat32 || k == kFloat64 {
			fix(lower, f.ID, k, true)
			fix(upper, f.ID, k, false)
		}
	}
	if !changed {
		return df, nil
	}
	b, err := iceberg.NewDataFileBuilder(ps, df.ContentType(), df.FilePath(), df.FileFormat(), df.Partition(), nil, nil, df.Count(), df.FileSizeBytes())
	if err != nil {
		return nil, err
	}
	// What table.DataFileFromMetadata sets for an unsorted data file.
	b.LowerBoundValues(lower).UpperBoundValues(upper).ColumnSizes(df.ColumnSizes()).ValueCounts(df.ValueCounts()).
		NullValueCounts(df.NullValueCounts()).NaNValueCounts(df.NaNValueCounts()).SplitOffsets(df.SplitOffsets())
	if id := df.SortOrderID(); id != nil {
		b.SortOrderID(*id)
	}
	return b.Build(), nil
}
