package protocol

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lakegw/lakegw/produce"
)

// batchError is why a partition's records were refused, as Kafka says it.
type batchError struct {
	code *kerr.Error
	msg  string
}

func (e *batchError) Error() string { return e.msg }

func refuse(code *kerr.Error, format string, args ...any) *batchError {
	return &batchError{code: code, msg: fmt.Sprintf(format, args...)}
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// decompressor knows every codec of Kafka's framing.
var decompressor = kgo.DefaultDecompressor()

// Offsets of the RecordBatch v2 header fields read before decoding it.
const (
	batchMagicAt    = 16
	batchAttrsAt    = 21
	batchHeaderSize = 61
	attrCodecMask   = 0x07
	attrTxn         = 0x10
	attrControl     = 0x20
)

// decodeBatch decodes one partition's records of a Produce request: a
// single RecordBatch of magic 2 (as Kafka requires from v3 on), its CRC
// checked, decompressed, every record parsed; transactional says whether
// the request is a transaction's, whose batches say so and only whose
// do. The records' bytes alias raw.
func decodeBatch(partition int32, raw []byte, transactional bool) (produce.Batch, *batchError) {
	if len(raw) < batchHeaderSize {
		return produce.Batch{}, refuse(kerr.CorruptMessage, "a record batch of %d bytes is shorter than its header", len(raw))
	}
	if raw[batchMagicAt] != 2 {
		return produce.Batch{}, refuse(kerr.UnsupportedForMessageFormat, "record batch magic %d: lakegw takes magic 2 (Produce v3+)", raw[batchMagicAt])
	}
	var rb kmsg.RecordBatch
	if err := rb.ReadFrom(raw); err != nil {
		return produce.Batch{}, refuse(kerr.CorruptMessage, "record batch: %v", err)
	}
	if size := int(rb.Length) + 12; size != len(raw) {
		if size < len(raw) {
			return produce.Batch{}, refuse(kerr.InvalidRecord, "more than one record batch for one partition")
		}
		return produce.Batch{}, refuse(kerr.CorruptMessage, "record batch says %d bytes, holds %d", size, len(raw))
	}
	if crc := crc32.Checksum(raw[batchAttrsAt:], castagnoli); crc != uint32(rb.CRC) {
		return produce.Batch{}, refuse(kerr.CorruptMessage, "record batch CRC %08x, computed %08x", uint32(rb.CRC), crc)
	}
	if rb.Attributes&attrControl != 0 {
		return produce.Batch{}, refuse(kerr.InvalidRecord, "a control batch in a Produce request")
	}
	if isTxn := rb.Attributes&attrTxn != 0; isTxn != transactional {
		if isTxn {
			return produce.Batch{}, refuse(kerr.InvalidTxnState, "transactional records in a produce request without a transactional id")
		}
		return produce.Batch{}, refuse(kerr.InvalidTxnState, "records that are not transactional in a transaction's produce request")
	}
	if rb.NumRecords <= 0 {
		return produce.Batch{}, refuse(kerr.InvalidRecord, "a record batch of %d records", rb.NumRecords)
	}
	body := rb.Records
	if codec := byte(rb.Attributes & attrCodecMask); codec != 0 {
		out, err := decompressBounded(body, codec)
		if errors.Is(err, errTooLarge) {
			return produce.Batch{}, refuse(kerr.MessageTooLarge, "%v", err)
		}
		if err != nil {
			return produce.Batch{}, refuse(kerr.CorruptMessage, "decompress records (codec %d): %v", codec, err)
		}
		body = out
	}
	b := produce.Batch{Partition: partition, ProducerID: rb.ProducerID, ProducerEpoch: rb.ProducerEpoch, BaseSequence: rb.FirstSequence,
		Records: make([]produce.Record, 0, min(int(rb.NumRecords), len(body)/7+1))}
	if rb.ProducerID < 0 {
		b.ProducerID = produce.NoProducer
	}
	for i := 0; i < int(rb.NumRecords); i++ {
		n, used := binary.Varint(body)
		if used <= 0 || n < 0 || int64(len(body)-used) < n {
			return produce.Batch{}, refuse(kerr.CorruptMessage, "record %d of %d: bad length", i, rb.NumRecords)
		}
		var r kmsg.Record
		if err := r.ReadFrom(body[:used+int(n)]); err != nil { // ReadFrom reads the length too
			return produce.Batch{}, refuse(kerr.CorruptMessage, "record %d of %d: %v", i, rb.NumRecords, err)
		}
		body = body[used+int(n):]
		rec := produce.Record{TimestampMs: rb.FirstTimestamp + r.TimestampDelta64, Key: r.Key, Value: r.Value}
		if r.Key != nil && len(r.Key) == 0 {
			rec.Key = []byte{}
		}
		if r.Value != nil && len(r.Value) == 0 {
			rec.Value = []byte{}
		}
		for _, h := range r.Headers {
			v := h.Value
			if v != nil && len(v) == 0 {
				v = []byte{}
			}
			rec.Headers = append(rec.Headers, produce.Header{Key: h.Key, Value: v})
		}
		b.Records = append(b.Records, rec)
	}
	if len(body) != 0 {
		return produce.Batch{}, refuse(kerr.CorruptMessage, "%d bytes after the batch's %d records", len(body), rb.NumRecords)
	}
	return b, nil
}

// produceCode maps what the produce path says to Kafka's error code.
func produceCode(err error) *kerr.Error {
	// A transaction's records are staged by the coordinator, whose
	// refusals of a produce request are the group coordinator's codes: a
	// fenced producer is INVALID_PRODUCER_EPOCH here.
	if code := coordinatorCode(err, kerr.InvalidProducerEpoch); code != nil {
		return code
	}
	var be *batchError
	switch {
	case errors.As(err, &be):
		return be.code
	case errors.Is(err, produce.ErrUnknownTopic), errors.Is(err, produce.ErrUnknownPartition):
		return kerr.UnknownTopicOrPartition
	case errors.Is(err, produce.ErrReadOnly):
		return kerr.PolicyViolation
	case errors.Is(err, produce.ErrOutOfOrderSequence):
		return kerr.OutOfOrderSequenceNumber
	case errors.Is(err, produce.ErrDuplicateSequence):
		return kerr.DuplicateSequenceNumber
	case errors.Is(err, produce.ErrInvalidProducerEpoch):
		return kerr.InvalidProducerEpoch
	case errors.Is(err, produce.ErrInvalidRecord):
		return kerr.InvalidRecord
	case errors.Is(err, produce.ErrClosed):
		return kerr.NotLeaderForPartition
	case errors.Is(err, produce.ErrCommitFailed):
		return kerr.KafkaStorageError
	}
	return kerr.RequestTimedOut
}
