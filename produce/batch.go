package produce

import (
	"github.com/lakegw/lakegw/changelog"
	"github.com/lakegw/lakegw/internal/kafkaseq"
)

// Header is one Kafka record header (a nil Value is a null value), as a
// raw topic stores it.
type Header = changelog.RawHeader

// Record is one produced Kafka record. Key and Value are nil when null.
type Record struct {
	TimestampMs int64
	Key, Value  []byte
	Headers     []Header
}

// NoProducer is the producer id of a batch from a producer that is not
// idempotent.
const NoProducer = -1

// Batch is one partition's records of a produce request.
type Batch struct {
	Partition     int32
	ProducerID    int64 // NoProducer: not idempotent
	ProducerEpoch int16
	BaseSequence  int32
	Records       []Record
}

// lastSequence is the sequence number of the batch's last record (they
// wrap at MaxInt32 as Kafka's do).
func (b *Batch) lastSequence() int32 {
	return kafkaseq.Last(b.BaseSequence, len(b.Records))
}

// Size is what the batch holds in memory until it is committed, for
// back-pressure.
func (b *Batch) Size() int64 {
	n := int64(64)
	for i := range b.Records {
		r := &b.Records[i]
		n += int64(len(r.Key)+len(r.Value)) + 48
		for _, h := range r.Headers {
			n += int64(len(h.Key)+len(h.Value)) + 40
		}
	}
	return n
}

// Result is what became of one Batch: its first record's offset, or why
// it was refused.
type Result struct {
	BaseOffset int64
	// LogStartOffset is the partition's first offset (0: raw topics keep
	// every record).
	LogStartOffset int64
	Err            error
}
