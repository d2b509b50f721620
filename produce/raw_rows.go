package produce

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/changelog"
)

// rawArrowSchema is the Arrow form of changelog.RawSchema, with field ids.
var rawArrowSchema = func() *arrow.Schema {
	sc, err := table.SchemaToArrowSchema(changelog.RawSchema(), nil, true, false)
	if err != nil {
		// RawSchema is a constant: only a change to it reaches this.
		panic(fmt.Sprintf("raw topic schema: %v", err))
	}
	return sc
}()

// rawRows are a raw topic's rows: every record as it came.
type rawRows struct{}

func (rawRows) schema() *arrow.Schema { return rawArrowSchema }

// prepare: any record fits a raw topic.
func (rawRows) prepare(*ticket) error { return nil }

func (rawRows) rows(partition int32, base int64, tickets []*ticket) []arrow.RecordBatch {
	return []arrow.RecordBatch{rawBatch(partition, base, tickets)}
}

// rawBatch builds the rows of one partition's records, offsets from base
// on, in the order given.
func rawBatch(partition int32, base int64, tickets []*ticket) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, rawArrowSchema)
	defer b.Release()
	parts := b.Field(0).(*array.Int32Builder)
	offs := b.Field(1).(*array.Int64Builder)
	ts := b.Field(2).(*array.TimestampBuilder)
	keys := b.Field(3).(*array.BinaryBuilder)
	values := b.Field(4).(*array.BinaryBuilder)
	hl := b.Field(5).(*array.ListBuilder)
	hs := hl.ValueBuilder().(*array.StructBuilder)
	hk := hs.FieldBuilder(0).(*array.StringBuilder)
	hv := hs.FieldBuilder(1).(*array.BinaryBuilder)
	// Sized once: grown append by append, the builders copied and
	// cleared their buffers again and again (a tenth of a produce's CPU).
	var rows, keyBytes, valueBytes int
	for _, t := range tickets {
		rows += len(t.batch.Records)
		for i := range t.batch.Records {
			keyBytes += len(t.batch.Records[i].Key)
			valueBytes += len(t.batch.Records[i].Value)
		}
	}
	b.Reserve(rows)
	keys.ReserveData(keyBytes)
	values.ReserveData(valueBytes)
	off := base
	for _, t := range tickets {
		for i := range t.batch.Records {
			r := &t.batch.Records[i]
			parts.Append(partition)
			offs.Append(off)
			off++
			ts.Append(arrow.Timestamp(r.TimestampMs * 1000))
			appendBinary(keys, r.Key)
			appendBinary(values, r.Value)
			hl.Append(true)
			for _, h := range r.Headers {
				hs.Append(true)
				hk.Append(h.Key)
				appendBinary(hv, h.Value)
			}
		}
	}
	return b.NewRecordBatch()
}

func appendBinary(b *array.BinaryBuilder, v []byte) {
	if v == nil {
		b.AppendNull()
		return
	}
	b.Append(v)
}
