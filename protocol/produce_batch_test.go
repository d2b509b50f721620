package protocol

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
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
	b, err := decodeBatch(4, raw, false)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if b.Partition != 4 || b.ProducerID != 7 || b.BaseSequence != 3 || len(b.Records) != 2 ||
		string(b.Records[1].Key) != "b" || string(b.Records[1].Value) != "2" || b.Records[0].Headers[0].Key != "h" {
		t.Fatalf("decoded %+v", b)
	}
	raw[len(raw)-1] ^= 1
	if _, err := decodeBatch(0, raw, false); err == nil || err.code != kerr.CorruptMessage {
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
	if _, err := decodeBatch(0, old, false); err == nil || err.code != kerr.UnsupportedForMessageFormat {
		t.Fatalf("magic 1: %v", err)
	}
	if _, err := decodeBatch(0, append(append([]byte(nil), raw...), raw...), false); err == nil || err.code != kerr.InvalidRecord {
		t.Fatalf("two batches: %v", err)
	}
	if _, err := decodeBatch(0, raw[:30], false); err == nil || err.code != kerr.CorruptMessage {
		t.Fatalf("short batch: %v", err)
	}
}

// compressedBatch is a batch of recs compressed with codec (Kafka's
// numbering), as a producer frames it.
func compressedBatch(t *testing.T, body []byte, n int32, codec kgo.CompressionCodec, id int16) []byte {
	t.Helper()
	comp, err := kgo.DefaultCompressor(codec)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	out, _ := comp.Compress(&buf, body)
	rb := kmsg.RecordBatch{Magic: 2, Attributes: id, LastOffsetDelta: n - 1, NumRecords: n, ProducerID: -1, FirstSequence: -1, Records: out}
	raw := rb.AppendTo(nil)
	binary.BigEndian.PutUint32(raw[8:], uint32(len(raw)-12))
	binary.BigEndian.PutUint32(raw[17:], crc32.Checksum(raw[21:], crc32.MakeTable(crc32.Castagnoli)))
	return raw
}

// Every codec decodes; a batch that decompresses past the bound (a
// "bomb": a few hundred KB of zeros that inflate to 80 MiB) is refused
// with MESSAGE_TOO_LARGE before it is held whole.
func TestDecodeBatchBoundsDecompression(t *testing.T) {
	var body []byte
	for i := range 3 {
		r := record("k", fmt.Sprint("value ", i))
		r.OffsetDelta = int32(i)
		r.Length = 0
		r.Length = int32(len(r.AppendTo(nil)) - 1)
		body = r.AppendTo(body)
	}
	codecs := map[string]struct {
		c  kgo.CompressionCodec
		id int16
	}{"gzip": {kgo.GzipCompression(), 1}, "snappy": {kgo.SnappyCompression(), 2}, "lz4": {kgo.Lz4Compression(), 3}, "zstd": {kgo.ZstdCompression(), 4}}
	bomb := make([]byte, 80<<20)
	for name, c := range codecs {
		b, err := decodeBatch(0, compressedBatch(t, body, 3, c.c, c.id), false)
		if err != nil || len(b.Records) != 3 || string(b.Records[2].Value) != "value 2" {
			t.Fatalf("%s: %v %+v", name, err, b)
		}
		if _, err := decodeBatch(0, compressedBatch(t, bomb, 1, c.c, c.id), false); err == nil || err.code != kerr.MessageTooLarge {
			t.Fatalf("%s bomb: %v, want MESSAGE_TOO_LARGE", name, err)
		}
	}
}
