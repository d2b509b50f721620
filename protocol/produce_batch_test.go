package protocol

import (
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// encodeBatch builds a RecordBatch as a producer does.
func encodeBatch(t *testing.T, recs []kmsg.Record, pid int64, seq int32) []byte {
	t.Helper()
	var body []byte
	for i, r := range recs {
		r.OffsetDelta = int32(i)
		r.Length = 0
		r.Length = int32(len(r.AppendTo(nil)) - 1) // the body after a one-byte length varint
		b := r.AppendTo(nil)
		body = append(body, b...)
	}
	rb := kmsg.RecordBatch{Magic: 2, LastOffsetDelta: int32(len(recs) - 1), FirstTimestamp: 1000, MaxTimestamp: 1000,
		ProducerID: pid, ProducerEpoch: 0, FirstSequence: seq, NumRecords: int32(len(recs)), Records: body}
	raw := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-12))
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return raw
}

func record(key, value string) kmsg.Record {
	r := kmsg.NewRecord()
	r.Key, r.Value = []byte(key), []byte(value)
	r.Headers = []kmsg.Header{{Key: "h", Value: []byte("v")}}
	return r
}

func TestDecodeBatchReadsEveryRecord(t *testing.T) {
	raw := encodeBatch(t, []kmsg.Record{record("a", "1"), record("b", "2")}, 7, 3)
	b, err := decodeBatch(4, raw)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if b.Partition != 4 || b.ProducerID != 7 || b.BaseSequence != 3 || len(b.Records) != 2 ||
		string(b.Records[1].Key) != "b" || string(b.Records[1].Value) != "2" || b.Records[0].Headers[0].Key != "h" {
		t.Fatalf("decoded %+v", b)
	}
	raw[len(raw)-1] ^= 1
	if _, err := decodeBatch(0, raw); err == nil || err.code != kerr.CorruptMessage {
		t.Fatalf("damaged batch: %v, want CORRUPT_MESSAGE", err)
	}
}

// Produce v0-2 carry message sets of magic 0 and 1: refused with
// UNSUPPORTED_FOR_MESSAGE_FORMAT; a request with two batches for one
// partition with INVALID_RECORD, as Kafka answers.
func TestDecodeBatchRefusesOldMagicAndTwoBatches(t *testing.T) {
	raw := encodeBatch(t, []kmsg.Record{record("a", "1")}, -1, -1)
	old := append([]byte(nil), raw...)
	old[16] = 1
	if _, err := decodeBatch(0, old); err == nil || err.code != kerr.UnsupportedForMessageFormat {
		t.Fatalf("magic 1: %v", err)
	}
	if _, err := decodeBatch(0, append(append([]byte(nil), raw...), raw...)); err == nil || err.code != kerr.InvalidRecord {
		t.Fatalf("two batches: %v", err)
	}
	if _, err := decodeBatch(0, raw[:30]); err == nil || err.code != kerr.CorruptMessage {
		t.Fatalf("short batch: %v", err)
	}
}
