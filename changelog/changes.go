package changelog

import (
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
)

// Op is the kind of a change event.
type Op uint8

const (
	// OpInsert is a new row (+I; debezium "c").
	OpInsert Op = iota + 1
	// OpUpdate replaces Before by After for one key (-U/+U; debezium "u").
	OpUpdate
	// OpDelete removes Before (-D; debezium "d").
	OpDelete
	// OpRead is a live row of a compacted prefix (debezium "r").
	OpRead
)

// Header is the value of the lakegw.op Kafka header for an event of this op.
func (o Op) Header() string {
	switch o {
	case OpInsert:
		return "+I"
	case OpUpdate:
		return "+U"
	case OpDelete:
		return "-D"
	case OpRead:
		return "r"
	}
	return "?"
}

// NoRow marks an absent before- or after-image.
var NoRow = RowRef{Batch: -1, Row: -1}

// RowRef points at one row of Changes.Batches.
type RowRef struct {
	Batch int32
	Row   int32
}

// Valid reports whether the reference names a row.
func (r RowRef) Valid() bool { return r.Batch >= 0 }

// Record is one change event. Before is set for updates and deletes, After
// for inserts, updates and reads.
type Record struct {
	Op        Op
	Before    RowRef
	After     RowRef
	Partition int32
}

// Changes holds the change events of one snapshot of one table, in the
// deterministic order in which they get offsets.
type Changes struct {
	// Table is "<namespace>.<table>".
	Table          string
	SnapshotID     int64
	SequenceNumber int64
	// TimestampMs is the snapshot's commit time; every record of the
	// snapshot carries it.
	TimestampMs int64
	// Schema is the schema the snapshot was written with; Batches have one
	// column per top-level field of it, in order.
	Schema *iceberg.Schema
	// KeyFieldIDs are the identifier (or configured key) field ids of
	// Schema; empty when the table has none. derive/ pairs deletes and
	// inserts into updates by them.
	KeyFieldIDs []int
	// KeyHashNames name KeyFieldIDs in the key JSON that AssignPartitions
	// hashes (nil: their names in Schema). derive/ sets the names of the
	// table's oldest schema, so that a renamed key column keeps its keys
	// in their partitions (StableKeyNames).
	KeyHashNames []string
	// Target is the schema the records are written in: the table's
	// current one, every row projected onto it by field id as Iceberg
	// readers do (projection.go). Nil: Schema, records as written.
	Target *iceberg.Schema
	// TargetKeyFieldIDs are the key fields written as a record's key when
	// Target is set: Target's identifier (or configured key) fields.
	TargetKeyFieldIDs []int
	Batches           []arrow.RecordBatch
	Records           []Record
	// Raw holds the produced records of a raw topic (raw_table.go): a
	// raw read fills it instead of Batches.
	Raw *RawRecords
	// Partitions is the number of topic partitions the records were spread
	// over (by key hash when > 1).
	Partitions int32

	// enc holds the JSON encoders of the batches, built once by Prepare so
	// that formats encode records without allocating. Nil for Changes that
	// were never prepared: formats then build encoders per call.
	enc *changesEncoders
	// byPartition holds each partition's record indexes, built once by
	// IndexPartitions for topics of several partitions, so that every
	// fetch of a partition finds them instead of filtering Records again.
	byPartition [][]int32
}

// RecordSchema is the schema the records are written in: Target, else
// Schema (nil for a Changes built without one).
func (c *Changes) RecordSchema() *iceberg.Schema {
	if c.Target != nil {
		return c.Target
	}
	return c.Schema
}

// Release frees the arrow memory held by the batches.
func (c *Changes) Release() {
	for _, b := range c.Batches {
		b.Release()
	}
	c.Batches = nil
	c.Raw = nil
	c.enc = nil
	c.byPartition = nil
}

// CountByPartition returns the number of records that fall in each partition.
func (c *Changes) CountByPartition() []int64 {
	n := c.Partitions
	if n < 1 {
		n = 1
	}
	counts := make([]int64, n)
	for i := range c.Records {
		p := c.Records[i].Partition
		if p >= 0 && p < n {
			counts[p]++
		}
	}
	return counts
}

// PartitionRecords returns the indexes into Records of the records of
// partition p, in order; the i-th of them has the i-th offset of the
// snapshot's segment in that partition. The result is shared: callers
// must not modify it.
func (c *Changes) PartitionRecords(p int32) []int32 {
	if c.byPartition != nil {
		if p < 0 || int(p) >= len(c.byPartition) {
			return nil
		}
		return c.byPartition[p]
	}
	return filterPartition(c.Records, p)
}

// IndexPartitions builds the per-partition record lists PartitionRecords
// returns, once every record's partition is set (by AssignPartitions, or by
// the writer of an LSM table's changelog files, whose bucket is the
// partition); nothing for a single partition: its records are all of them,
// in order. Exported for derive/, which builds Changes; call it before
// sharing c between goroutines (it mutates c).
func (c *Changes) IndexPartitions() {
	if c.Partitions <= 1 {
		return
	}
	counts := c.CountByPartition()
	idx := make([][]int32, len(counts))
	for p, n := range counts {
		idx[p] = make([]int32, 0, n)
	}
	for i := range c.Records {
		if p := c.Records[i].Partition; p >= 0 && int(p) < len(idx) {
			idx[p] = append(idx[p], int32(i))
		}
	}
	c.byPartition = idx
}

func filterPartition(recs []Record, p int32) []int32 {
	out := make([]int32, 0, len(recs))
	for i := range recs {
		if recs[i].Partition == p {
			out = append(out, int32(i))
		}
	}
	return out
}

// The fixed heap cost of what Changes holds besides buffer bytes, as
// measured with the Go heap (derive's TestSizeBytesOfSmallSnapshots): each
// record batch has an arrow schema with its fields and metadata, and each
// column an array, its ArrayData and buffer headers. A streaming table's
// snapshot of a few rows is mostly this: counting buffers alone put the
// estimate of such snapshots at a fifth of their heap.
const (
	changesOverheadBytes = 1024
	batchOverheadBytes   = 2560
	columnOverheadBytes  = 128
)

// SizeBytes estimates the memory held, for cache accounting.
func (c *Changes) SizeBytes() int64 {
	n := int64(changesOverheadBytes) + int64(cap(c.Records))*int64(unsafe.Sizeof(Record{}))
	for _, recs := range c.byPartition {
		n += int64(cap(recs)) * 4
	}
	if r := c.Raw; r != nil {
		n += r.Bytes + int64(cap(r.Offsets)+cap(r.Timestamps))*8 + int64(cap(r.Keys)+cap(r.Values)+cap(r.Headers))*24
	}
	for _, b := range c.Batches {
		n += BatchBytes(b)
	}
	return n
}

// BatchBytes estimates the memory an Arrow batch holds, for cache
// accounting: its buffers (nested ones too) and their bookkeeping.
func BatchBytes(b arrow.RecordBatch) int64 {
	n := batchOverheadBytes + b.NumCols()*columnOverheadBytes
	for _, col := range b.Columns() {
		n += arrayDataBytes(col.Data())
	}
	return n
}

func arrayDataBytes(d arrow.ArrayData) int64 {
	var n int64
	for _, buf := range d.Buffers() {
		if buf != nil {
			// Capacity, not length: builders grow buffers by
			// doubling, and the heap holds all of it.
			n += int64(buf.Cap())
		}
	}
	for _, child := range d.Children() {
		n += arrayDataBytes(child)
	}
	return n
}
