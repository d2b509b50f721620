package lsm

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"
	"unsafe"

	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/parquet-go/parquet-go"
	pqcompress "github.com/parquet-go/parquet-go/compress"
	pqencoding "github.com/parquet-go/parquet-go/encoding"
)

// lakegw writes its LSM Parquet files (sorted runs, changelog files,
// position delete files) with parquet-go and reads every Parquet file with
// arrow-go, as iceberg-go does. What the writer guarantees, whatever the
// library:
//   - zstd compression. Never LZ4_RAW: parquet-go's LZ4_RAW produced
//     corrupt pages here.
//   - Every column carries its Iceberg field id, columns are in schema
//     order, and the physical and logical types are those Iceberg readers
//     (iceberg-go, PyIceberg, Spark) expect: int and date INT32 (date
//     annotated DATE), long INT64, float FLOAT, double DOUBLE, string
//     BYTE_ARRAY annotated STRING, binary plain BYTE_ARRAY, timestamp and
//     timestamptz INT64 TIMESTAMP(MICROS) with isAdjustedToUTC false and
//     true, decimal(P, S) DECIMAL(P, S) on INT32 (P <= 9), INT64 (P <= 18)
//     or else FIXED_LEN_BYTE_ARRAY of the fewest bytes that hold P digits
//     (the Iceberg spec's mapping, which Iceberg Java writes, and pqarrow
//     with WithStoreDecimalAsInteger). Required Iceberg fields are
//     REQUIRED, others OPTIONAL. LSM tables take primitive columns only
//     (kindOf), so there is no nested type to map. TestLsmParquetGoFiles
//     and TestLsmDecimalTable check this against pqarrow.
//   - Split-block bloom filters (the Parquet spec's, xxhash of the plain
//     encoding) on the requested columns, sized per row group.
//   - PLAIN encoding with RLE levels only, as every reader decodes it
//     (parquet-go's default DELTA_LENGTH_BYTE_ARRAY for strings and binary
//     is not read by pyarrow in PyIceberg's delete-file path).
//   - Data page v1 (what Iceberg Java writes, read by every reader), pages
//     of about pqPageBytes, row groups of at most the given row count.
//   - Chunk statistics (min/max/null count) on every column, from which
//     table.DataFileFromMetadata derives the manifest metrics, in the
//     order of the column's logical type: signed for decimals stored as
//     FIXED_LEN_BYTE_ARRAY, which parquet-go would order as unsigned
//     bytes (decimal_parquet.go).

// pqPageBytes is the uncompressed size at which a data page is cut.
const pqPageBytes = 256 << 10

// pqBloomBitsPerValue sizes the bloom filters: 10 bits per distinct value
// gives about 1 % false positives with split-block filters.
const pqBloomBitsPerValue = 10

// pqCol is one column of a Parquet file lakegw writes.
type pqCol struct {
	name     string
	id       int
	kind     kind
	dec      decType // of a decimal column
	required bool
	bloom    bool
}

// tableColumns are the columns of the table schema, in order, with bloom
// filters on the key columns when bloomKeys is set.
func tableColumns(sp *spec, bloomKeys bool) []pqCol {
	fields := sp.schema.Fields()
	cols := make([]pqCol, len(fields))
	for i, f := range fields {
		cols[i] = pqCol{name: f.Name, id: f.ID, kind: sp.kinds[i], dec: sp.decs[i], required: f.Required}
	}
	if bloomKeys {
		for _, i := range sp.keyIdx {
			cols[i].bloom = true
		}
	}
	return cols
}

// leafNode is the Parquet type of a column.
func leafNode(c pqCol) (parquet.Node, error) {
	switch c.kind {
	case kBool:
		return parquet.Leaf(parquet.BooleanType), nil
	case kInt32:
		return parquet.Leaf(parquet.Int32Type), nil
	case kInt64:
		return parquet.Leaf(parquet.Int64Type), nil
	case kFloat32:
		return parquet.Leaf(parquet.FloatType), nil
	case kFloat64:
		return parquet.Leaf(parquet.DoubleType), nil
	case kString:
		return parquet.String(), nil
	case kBinary:
		return parquet.Leaf(parquet.ByteArrayType), nil
	case kDate:
		return parquet.Date(), nil
	case kTimestamp:
		return parquet.TimestampAdjusted(parquet.Microsecond, false), nil
	case kTimestampTz:
		return parquet.TimestampAdjusted(parquet.Microsecond, true), nil
	case kDecimal:
		return decimalNode(c.dec)
	}
	return nil, fmt.Errorf("no Parquet type for column kind %d", c.kind)
}

// pqSchema is the Parquet schema of cols, in their order (parquet.Group
// would sort them by name) and with their field ids.
func pqSchema(cols []pqCol) (*parquet.Schema, error) {
	g := make(orderedGroup, len(cols))
	for i, c := range cols {
		n, err := leafNode(c)
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", c.name, err)
		}
		if c.required {
			n = parquet.Required(n)
		} else {
			n = parquet.Optional(n)
		}
		g[i] = &orderedField{Node: parquet.FieldID(n, c.id), name: c.name}
	}
	return parquet.NewSchema("table", g), nil
}

// orderedGroup is a group node whose fields keep their order. lakegw
// writes parquet.Row values, so the reflection hooks (GoType, Value) are
// never used for writing.
type orderedGroup []parquet.Field

func (g orderedGroup) ID() int            { return 0 }
func (g orderedGroup) Type() parquet.Type { return parquet.Group{}.Type() }
func (g orderedGroup) Optional() bool     { return false }
func (g orderedGroup) Repeated() bool     { return false }
func (g orderedGroup) Required() bool     { return true }
func (g orderedGroup) Leaf() bool         { return false }
func (g orderedGroup) Fields() []parquet.Field {
	return g
}
func (g orderedGroup) Encoding() pqencoding.Encoding { return nil }
func (g orderedGroup) Compression() pqcompress.Codec { return nil }
func (g orderedGroup) GoType() reflect.Type          { return reflect.TypeFor[map[string]any]() }
func (g orderedGroup) String() string {
	var b strings.Builder
	b.WriteString("{")
	for i, f := range g {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s(%d): %s", f.Name(), f.ID(), f.Type())
	}
	b.WriteString("}")
	return b.String()
}

type orderedField struct {
	parquet.Node
	name string
}

func (f *orderedField) Name() string { return f.name }

func (f *orderedField) Value(base reflect.Value) reflect.Value {
	if base.Kind() == reflect.Map {
		return base.MapIndex(reflect.ValueOf(f.name))
	}
	return reflect.Value{}
}

// pqValue converts a canonical value (or nil) of column c to a Parquet
// value at column index ci.
func pqValue(v any, ci int, c pqCol) (parquet.Value, error) {
	var def int
	if !c.required {
		def = 1
	}
	var pv parquet.Value
	switch x := v.(type) {
	case nil:
		if c.required {
			return pv, fmt.Errorf("null in a required column")
		}
		return parquet.NullValue().Level(0, 0, ci), nil
	case bool:
		pv = parquet.BooleanValue(x)
	case int32:
		pv = parquet.Int32Value(x)
	case int64:
		pv = parquet.Int64Value(x)
	case float32:
		pv = parquet.FloatValue(x)
	case float64:
		pv = parquet.DoubleValue(x)
	case string:
		// parquet-go copies the bytes into its page buffer.
		pv = parquet.ByteArrayValue(unsafe.Slice(unsafe.StringData(x), len(x)))
	case []byte:
		pv = parquet.ByteArrayValue(x)
	case Decimal:
		var err error
		if pv, err = decimalValue(x, c.dec); err != nil {
			return pv, err
		}
	default:
		return pv, fmt.Errorf("no Parquet value for %T", v)
	}
	return pv.Level(0, def, ci), nil
}

// pqWriteBatch is how many rows encodeRows hands parquet-go at a time.
const pqWriteBatch = 1024

// encodeRows writes n rows of cols as a Parquet file body; value returns
// the canonical value of row r, column c. Row groups hold at most
// rowGroupRows rows.
func encodeRows(cols []pqCol, n int, rowGroupRows int, value func(r, c int) any) ([]byte, error) {
	sc, err := pqSchema(cols)
	if err != nil {
		return nil, err
	}
	opts := []parquet.WriterOption{
		sc,
		parquet.Compression(&parquet.Zstd),
		parquet.DataPageVersion(1),
		parquet.PageBufferSize(pqPageBytes),
		parquet.MaxRowsPerRowGroup(int64(rowGroupRows)),
		parquet.DataPageStatistics(true),
		// parquet-go would write BYTE_ARRAY columns DELTA_LENGTH_BYTE_ARRAY,
		// which pyarrow (PyIceberg) cannot decode into the dictionary
		// arrays PyIceberg reads file_path of position deletes as.
		parquet.DefaultEncodingFor(parquet.ByteArray, &parquet.Plain),
	}
	var blooms []parquet.BloomFilterColumn
	for _, c := range cols {
		if c.bloom {
			blooms = append(blooms, parquet.SplitBlockFilter(pqBloomBitsPerValue, c.name))
		}
	}
	if len(blooms) > 0 {
		opts = append(opts, parquet.BloomFilters(blooms...))
	}
	var buf bytes.Buffer
	w := parquet.NewWriter(&buf, opts...)
	values := make([]parquet.Value, min(n, pqWriteBatch)*len(cols))
	rows := make([]parquet.Row, 0, min(n, pqWriteBatch))
	for start := 0; start < n; start += pqWriteBatch {
		end := min(start+pqWriteBatch, n)
		rows = rows[:0]
		for r := start; r < end; r++ {
			row := values[(r-start)*len(cols) : (r-start+1)*len(cols) : (r-start+1)*len(cols)]
			for ci, c := range cols {
				v, err := pqValue(value(r, ci), ci, c)
				if err != nil {
					return nil, fmt.Errorf("row %d column %s: %w", r, c.name, err)
				}
				row[ci] = v
			}
			rows = append(rows, row)
		}
		if _, err := w.WriteRows(rows); err != nil {
			return nil, err
		}
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// footer parses the footer of a file body with arrow-go, the reader
// iceberg-go derives manifest metrics with.
func footer(body []byte) (*metadata.FileMetaData, error) {
	pf, err := file.NewParquetReader(bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	defer pf.Close()
	return pf.MetaData(), nil
}
