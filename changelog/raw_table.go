package changelog

import (
	"github.com/apache/iceberg-go"
)

// Raw topics. A topic created without a schema stores each produced Kafka
// record as it came, one row per record, in an Iceberg append table
// partitioned by Kafka partition, so that a consumer reads back exactly the
// produced bytes, offsets, timestamps and headers, and any engine reads the
// same rows:
//
//	partition int (identity-partitioned), offset long, timestamp timestamptz,
//	key binary, value binary, headers list<struct<key string, value binary>>
//
// A null key or value is a record without one (a null value is a
// tombstone). Offsets are assigned by the writer (produce/), dense per
// partition from 0, and the summary of every snapshot carries the record
// count and end offset of each partition (SummaryLSMCounts, SummaryLSMEnds:
// the same keys an LSM table's commits carry), so the offset index is built
// from table metadata alone. Rows are never deleted or rewritten by
// lakegw: the records of a partition between two offsets are the rows of
// that partition whose offset lies between them, whatever snapshot added
// them (derive.RawFiles, derive.ReadRaw), so a compacted prefix of a raw
// topic holds exactly the records it replaces, at their offsets.
const (
	// PropRaw marks a raw topic's table ("true").
	PropRaw = "lakegw.raw"

	RawPartitionColumn = "partition"
	RawOffsetColumn    = "offset"
	RawTimestampColumn = "timestamp"
	RawKeyColumn       = "key"
	RawValueColumn     = "value"
	RawHeadersColumn   = "headers"

	// RawPartitionFieldID is the field id of the partition column;
	// RawOffsetFieldID that of the offset column, whose bounds in each data
	// file's manifest entry locate a partition's offsets.
	RawPartitionFieldID = 1
	RawOffsetFieldID    = 2
	// RawSpecFieldID is the id of the identity partition field on the
	// partition column (Iceberg numbers partition fields from 1000).
	RawSpecFieldID = 1000

	// RawFormat is the record format of raw topics.
	RawFormat = "raw"
)

// IsRawTable reports whether a table's properties mark it a raw topic's.
func IsRawTable(props iceberg.Properties) bool { return props[PropRaw] == "true" }

// PropAppend marks the table of an append table topic ("true"): a table
// with a schema and no primary key that producers append rows to, one per
// record, through lakegw alone. Its commits carry the same per-partition
// counts and ends as a raw topic's (one partition), so its offsets are
// known from its metadata; its rows are served as inserts like any table's.
const PropAppend = "lakegw.append"

// IsAppendTable reports whether a table's properties mark it an append
// table topic's.
func IsAppendTable(props iceberg.Properties) bool { return props[PropAppend] == "true" }

// RawSchema is the schema of a raw topic's table.
func RawSchema() *iceberg.Schema {
	return iceberg.NewSchema(0,
		iceberg.NestedField{ID: RawPartitionFieldID, Name: RawPartitionColumn, Type: iceberg.PrimitiveTypes.Int32, Required: true},
		iceberg.NestedField{ID: RawOffsetFieldID, Name: RawOffsetColumn, Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 3, Name: RawTimestampColumn, Type: iceberg.PrimitiveTypes.TimestampTz, Required: true},
		iceberg.NestedField{ID: 4, Name: RawKeyColumn, Type: iceberg.PrimitiveTypes.Binary},
		iceberg.NestedField{ID: 5, Name: RawValueColumn, Type: iceberg.PrimitiveTypes.Binary},
		iceberg.NestedField{ID: 6, Name: RawHeadersColumn, Type: &iceberg.ListType{
			ElementID: 7, ElementRequired: true,
			Element: &iceberg.StructType{FieldList: []iceberg.NestedField{
				{ID: 8, Name: "key", Type: iceberg.PrimitiveTypes.String, Required: true},
				{ID: 9, Name: "value", Type: iceberg.PrimitiveTypes.Binary},
			}},
		}},
	)
}

// RawPartitionSpec partitions a raw topic's table by Kafka partition.
func RawPartitionSpec() iceberg.PartitionSpec {
	return iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{RawPartitionFieldID}, FieldID: RawSpecFieldID,
		Name: RawPartitionColumn, Transform: iceberg.IdentityTransform{}})
}

// RawHeader is one Kafka record header.
type RawHeader struct {
	Key   string
	Value []byte // nil: a null value
}

// RawRecords holds the Kafka attributes of the records of a raw topic's
// Changes, by row: Record.After.Row indexes them. Keys and Values are nil
// for a null key or value. The byte slices share one arena per read.
type RawRecords struct {
	Offsets    []int64
	Timestamps []int64 // milliseconds
	Keys       [][]byte
	Values     [][]byte
	Headers    [][]RawHeader
	// Bytes is the size of the arena and header strings, for SizeBytes.
	Bytes int64
}

// rawFormat writes a raw topic's records as they were produced.
type rawFormat struct{}

func (rawFormat) Name() string { return RawFormat }

func (rawFormat) AppendKey(dst []byte, c *Changes, rec *Record) ([]byte, bool) {
	r, i, ok := rawRow(c, rec)
	if !ok || r.Keys[i] == nil {
		return dst, false
	}
	return append(dst, r.Keys[i]...), true
}

func (rawFormat) AppendValue(dst []byte, c *Changes, rec *Record) ([]byte, bool) {
	r, i, ok := rawRow(c, rec)
	if !ok || r.Values[i] == nil {
		return dst, false
	}
	return append(dst, r.Values[i]...), true
}

// RecordTimestamp is the record's own timestamp (milliseconds).
func (rawFormat) RecordTimestamp(c *Changes, rec *Record) int64 {
	r, i, ok := rawRow(c, rec)
	if !ok {
		return c.TimestampMs
	}
	return r.Timestamps[i]
}

// RecordHeaders are the record's own headers, in place of lakegw's.
func (rawFormat) RecordHeaders(c *Changes, rec *Record) []RawHeader {
	r, i, ok := rawRow(c, rec)
	if !ok {
		return nil
	}
	return r.Headers[i]
}

func rawRow(c *Changes, rec *Record) (*RawRecords, int, bool) {
	r := c.Raw
	if r == nil || !rec.After.Valid() || int(rec.After.Row) >= len(r.Keys) {
		return nil, 0, false
	}
	return r, int(rec.After.Row), true
}

// RecordAttributes is implemented by a format whose records carry their
// own timestamp and headers (raw topics) rather than the snapshot's commit
// time and lakegw's provenance headers.
type RecordAttributes interface {
	RecordTimestamp(c *Changes, rec *Record) int64
	RecordHeaders(c *Changes, rec *Record) []RawHeader
}
