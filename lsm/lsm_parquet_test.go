package lsm

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	pqschema "github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/changelog"
)

// allTypesSchema has every column type LSM tables take, required and
// optional, under a composite key.
var allTypesSchema = iceberg.NewSchemaWithIdentifiers(0, []int{1, 2},
	iceberg.NestedField{ID: 1, Name: "region", Type: iceberg.PrimitiveTypes.String, Required: true},
	iceberg.NestedField{ID: 2, Name: "n", Type: iceberg.PrimitiveTypes.Int32, Required: true},
	iceberg.NestedField{ID: 3, Name: "ok", Type: iceberg.PrimitiveTypes.Bool},
	iceberg.NestedField{ID: 4, Name: "f", Type: iceberg.PrimitiveTypes.Float32},
	iceberg.NestedField{ID: 5, Name: "dbl", Type: iceberg.PrimitiveTypes.Float64, Required: true},
	iceberg.NestedField{ID: 6, Name: "big", Type: iceberg.PrimitiveTypes.Int64},
	iceberg.NestedField{ID: 7, Name: "b", Type: iceberg.PrimitiveTypes.Binary},
	iceberg.NestedField{ID: 8, Name: "d", Type: iceberg.PrimitiveTypes.Date},
	iceberg.NestedField{ID: 9, Name: "ts", Type: iceberg.PrimitiveTypes.Timestamp},
	iceberg.NestedField{ID: 10, Name: "tstz", Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
	iceberg.NestedField{ID: 11, Name: "s", Type: iceberg.PrimitiveTypes.String},
)

// The LSM files written with parquet-go are what pqarrow would write for
// the same Arrow schema (column order, physical and logical types,
// repetition, Iceberg field ids), zstd-compressed, read back by iceberg-go
// with the right Arrow types, with manifest metrics equal to those of a
// pqarrow file of the same rows, and bloom filters on the key columns only
// that rule out absent keys.
func TestLsmParquetGoFiles(t *testing.T) {
	ctx := context.Background()
	cat := testCatalog(t, t.TempDir())
	ident := table.Identifier{"ns", "pqgo"}
	tb, err := Create(ctx, cat, ident, allTypesSchema, CreateOptions{PrimaryKey: []string{"region", "n"}, Buckets: 1}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	w, _ := tb.NewWriter(ctx)
	for i := 0; i < 300; i += 2 {
		row := map[string]any{"region": fmt.Sprint("r", i%3), "n": i, "dbl": float64(i) / 4, "tstz": "2024-03-01T10:00:00Z"}
		if i%5 != 0 { // every fifth row leaves the optional columns null
			row["ok"], row["f"], row["big"], row["b"], row["d"] = i%2 == 0, float64(i)/2, int64(i)<<40, []byte{byte(i), 0}, "2024-03-01"
			row["ts"], row["s"] = "2024-03-01T10:00:00.5", strings.Repeat("x", i%4) // includes ""
		}
		if err := w.Upsert(row); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	// An update and a delete: a position delete file and a changelog file
	// with -U/+U and -D.
	if err := w.Upsert(map[string]any{"region": "r1", "n": 4, "dbl": 1.5, "tstz": "2024-03-02T10:00:00Z", "s": "new"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Delete(map[string]any{"region": "r2", "n": 8}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	tbl, sp, err := tb.load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st, err := loadState(ctx, tbl, sp, nil)
	if err != nil {
		t.Fatal(err)
	}
	var run *runFile
	for _, f := range st.buckets[0] {
		if len(f.deletes) > 0 {
			run = f
		}
	}
	if run == nil || len(run.deletes) != 1 {
		t.Fatalf("want the first run with one position delete file: %+v", st.buckets[0])
	}

	// Run file: schema as pqarrow would write it, zstd, bloom filters on
	// the key columns only.
	asc, err := table.SchemaToArrowSchema(sp.schema, nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	runArrow := arrow.NewSchema(append(asc.Fields(), arrow.Field{Name: seqColumn, Type: arrow.PrimitiveTypes.Int64,
		Metadata: arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{fmt.Sprint(seqFieldID)})}), nil)
	runMeta := checkParquetFile(t, fs, run.path, runArrow, []string{"region", "n"})
	if runMeta.NumRowGroups() != 1 || runMeta.NumRows != 150 {
		t.Fatalf("run file: %d row groups, %d rows", runMeta.NumRowGroups(), runMeta.NumRows)
	}
	clArrow, err := changelog.LSMChangelogArrowSchema(sp.schema)
	if err != nil {
		t.Fatal(err)
	}
	mf, err := fs.Open(tbl.CurrentSnapshot().Summary.Properties[changelog.SummaryLSMManifest])
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(mf)
	mf.Close()
	if err != nil {
		t.Fatal(err)
	}
	man, err := changelog.DecodeLSMManifest(data)
	if err != nil || len(man.Files) != 1 || man.Files[0].Rows != 3 {
		t.Fatalf("changelog manifest %+v: %v", man, err)
	}
	checkParquetFile(t, fs, man.Files[0].Path, clArrow, nil)
	checkParquetFile(t, fs, run.deletes[0].FilePath(), table.PositionalDeleteArrowSchema, nil)

	// Manifest metrics: those of a pqarrow file of the same rows.
	d, err := readRun(ctx, fs, sp, run.path)
	if err != nil {
		t.Fatal(err)
	}
	ref := pqarrowRunDataFile(t, tbl, sp, runArrow, d)
	for name, get := range map[string]func(iceberg.DataFile) any{
		"record count":      func(f iceberg.DataFile) any { return f.Count() },
		"value counts":      func(f iceberg.DataFile) any { return f.ValueCounts() },
		"null value counts": func(f iceberg.DataFile) any { return f.NullValueCounts() },
		"nan value counts":  func(f iceberg.DataFile) any { return f.NaNValueCounts() },
		"lower bounds":      func(f iceberg.DataFile) any { return f.LowerBoundValues() },
		"upper bounds":      func(f iceberg.DataFile) any { return f.UpperBoundValues() },
		"split offsets":     func(f iceberg.DataFile) any { return len(f.SplitOffsets()) },
		"column size keys":  func(f iceberg.DataFile) any { return slices.Sorted(maps.Keys(f.ColumnSizes())) },
	} {
		if got, want := get(run.df), get(ref); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: parquet-go file %v, pqarrow file %v", name, got, want)
		}
	}
	if _, ok := run.df.LowerBoundValues()[seqFieldID]; ok {
		t.Errorf("bounds on %s", seqColumn)
	}

	// iceberg-go reads the table with the Iceberg types.
	scan := tbl.Scan()
	at, err := scan.ToArrowTable(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer at.Release()
	want := map[string]arrow.DataType{
		"region": arrow.BinaryTypes.String, "n": arrow.PrimitiveTypes.Int32, "ok": arrow.FixedWidthTypes.Boolean,
		"f": arrow.PrimitiveTypes.Float32, "dbl": arrow.PrimitiveTypes.Float64, "big": arrow.PrimitiveTypes.Int64,
		"b": arrow.BinaryTypes.Binary, "d": arrow.FixedWidthTypes.Date32,
		"ts": &arrow.TimestampType{Unit: arrow.Microsecond}, "tstz": &arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"},
		"s": arrow.BinaryTypes.String,
	}
	if at.NumCols() != int64(len(want)) || at.NumRows() != 149 {
		t.Fatalf("scan: %d columns, %d rows: %s", at.NumCols(), at.NumRows(), at.Schema())
	}
	for i, f := range at.Schema().Fields() {
		if wt, ok := want[f.Name]; !ok || !arrow.TypeEqual(f.Type, wt) || f.Nullable != !sp.schema.Field(i).Required {
			t.Errorf("scan column %d %s: %s nullable=%v, want %v", i, f.Name, f.Type, f.Nullable, wt)
		}
	}
	got := map[string]string{}
	tr := array.NewTableReader(at, 1024)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		for r := 0; r < int(rec.NumRows()); r++ {
			got[fmt.Sprint(rec.Column(0).ValueStr(r), "/", rec.Column(1).ValueStr(r))] = renderArrowRow(t, rec, r)
		}
	}
	if g := got["r1/4"]; g != "r1|4|null|null|1.5|null|null|null|null|1709373600000000|new" {
		t.Errorf("r1/4: %s", g)
	}
	if g := got["r0/6"]; g != "r0|6|true|3|1.5|6597069766656|[6 0]|19783|1709287200500000|1709287200000000|xx" {
		t.Errorf("r0/6: %s", g)
	}
	if _, ok := got["r2/8"]; ok {
		t.Error("deleted key r2/8 scanned")
	}
	if g := got["r1/10"]; g != "r1|10|null|null|2.5|null|null|null|null|1709287200000000|null" {
		t.Errorf("r1/10: %s", g)
	}

	// The bloom filters rule out an absent key inside the key range and
	// keep every present one.
	keys := []Row{}
	for i := 0; i < 300; i++ {
		k := make(Row, len(sp.names))
		k[0], k[1] = fmt.Sprint("r", i%3), int32(i)
		keys = append(keys, k)
	}
	absent := make(Row, len(sp.names))
	absent[0], absent[1] = "r1", int32(151) // in the range, odd: never written
	keys = append(keys, absent)
	cand := make([]int, len(keys))
	for i := range cand {
		cand[i] = i
	}
	if !run.mayContain(sp, absent) {
		t.Fatalf("key bounds %v..%v rule out %v", run.lower, run.upper, absent)
	}
	kept, err := bloomCandidates(fs, sp, run.path, keys, cand)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(kept, len(keys)-1) {
		t.Error("bloom filters keep the absent key r1/151")
	}
	var falsePos int
	for i := 0; i < 300; i++ {
		if has := slices.Contains(kept, i); i%2 == 0 && !has {
			t.Errorf("bloom filters rule out present key %v", keys[i][:2])
		} else if i%2 == 1 && has {
			falsePos++
		}
	}
	if falsePos > 15 {
		t.Errorf("bloom filters kept %d of 150 absent keys", falsePos)
	}
}

// checkParquetFile checks that the file at path has the schema pqarrow
// writes for sc (field ids, types, repetition, order), every column chunk
// zstd-compressed with statistics, and bloom filters exactly on the bloom
// columns. It returns the footer.
func checkParquetFile(t *testing.T, fs icebergio.IO, path string, sc *arrow.Schema, bloom []string) *metadata.FileMetaData {
	t.Helper()
	pf, err := openParquet(fs, path)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	meta := pf.MetaData()
	if !strings.Contains(meta.GetCreatedBy(), "parquet-go") {
		t.Errorf("%s: created by %q", path, meta.GetCreatedBy())
	}
	ref := pqarrowSchema(t, sc)
	if got, want := meta.Schema.NumColumns(), ref.NumColumns(); got != want {
		t.Fatalf("%s: %d columns, want %d", path, got, want)
	}
	for i := 0; i < ref.NumColumns(); i++ {
		if got, want := describeColumn(meta.Schema.Column(i)), describeColumn(ref.Column(i)); got != want {
			t.Errorf("%s column %d: %s, pqarrow writes %s", path, i, got, want)
		}
	}
	for rg := 0; rg < meta.NumRowGroups(); rg++ {
		rgm := meta.RowGroup(rg)
		for i := 0; i < rgm.NumColumns(); i++ {
			cc, err := rgm.ColumnChunk(i)
			if err != nil {
				t.Fatal(err)
			}
			name := meta.Schema.Column(i).Name()
			if cc.Compression() != compress.Codecs.Zstd {
				t.Errorf("%s column %s: compression %s, want zstd", path, name, cc.Compression())
			}
			for _, e := range cc.Encodings() {
				if e != parquet.Encodings.Plain && e != parquet.Encodings.RLE {
					t.Errorf("%s column %s: encoding %s, want PLAIN values and RLE levels", path, name, e)
				}
			}
			if ok, err := cc.StatsSet(); !ok || err != nil {
				t.Errorf("%s column %s: no statistics (%v)", path, name, err)
			}
			if has := cc.BloomFilterOffset() > 0; has != slices.Contains(bloom, name) {
				t.Errorf("%s column %s: bloom filter %v", path, name, has)
			}
		}
	}
	return meta
}

func describeColumn(c *pqschema.Column) string {
	return fmt.Sprintf("%s id=%d %s %s converted=%s rep=%s def=%d", c.Name(), c.SchemaNode().FieldID(), c.PhysicalType(), c.LogicalType(),
		c.ConvertedType(), c.SchemaNode().RepetitionType(), c.MaxDefinitionLevel())
}

// pqarrowSchema is the Parquet schema of a file pqarrow writes for sc, as
// read back from the file. Decimals are stored as integers up to 18
// digits, as the Iceberg spec maps them.
func pqarrowSchema(t *testing.T, sc *arrow.Schema) *pqschema.Schema {
	t.Helper()
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(sc, &buf, parquet.NewWriterProperties(parquet.WithStoreDecimalAsInteger(true)), pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	meta, err := footer(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return meta.Schema
}

// pqarrowRunDataFile writes d as lakegw wrote run files with pqarrow
// (decimals of up to 18 digits as integers, as the Iceberg spec maps them)
// and returns the DataFile iceberg-go derives from its footer.
func pqarrowRunDataFile(t *testing.T, tbl *table.Table, sp *spec, sc *arrow.Schema, d *runData) iceberg.DataFile {
	t.Helper()
	n := len(sp.names)
	rec, err := buildRecord(sc, 0, d.rows, func(b *array.RecordBuilder, row int) error {
		b.Field(n).(*array.Int64Builder).Append(d.seqs[row])
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	var buf bytes.Buffer
	props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Zstd), parquet.WithStats(true), parquet.WithStoreDecimalAsInteger(true))
	w, err := pqarrow.NewFileWriter(sc, &buf, props, pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	meta, err := w.FileMetadata()
	if err != nil {
		t.Fatal(err)
	}
	props2 := iceberg.Properties{"write.metadata.metrics.column." + seqColumn: "none"}
	maps.Copy(props2, tbl.Properties())
	for _, i := range sp.keyIdx {
		props2["write.metadata.metrics.column."+sp.names[i]] = "full"
	}
	df, err := table.DataFileFromMetadata(table.DataFileArgs{
		Schema: runSchema(sp), Spec: tbl.Spec(), Format: iceberg.ParquetFile, Metadata: meta,
		FilePath: "ref.parquet", FileSize: int64(buf.Len()), Content: iceberg.EntryContentData,
		Properties: props2, FormatVersion: tbl.Metadata().Version(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return df
}
