package fetch

import (
	"bytes"
	"fmt"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lakegw/lakegw/changelog"
)

// testChanges builds the changes of one snapshot of n inserted rows.
func testChanges(t testing.TB, n int) *changelog.Changes {
	t.Helper()
	schema := iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String},
	)
	sc := arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64},
		{Name: "name", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for i := range n {
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		b.Field(1).(*array.StringBuilder).Append("name-" + strconv.Itoa(i))
	}
	c := &changelog.Changes{
		Table: "ns.t", SnapshotID: 77, SequenceNumber: 3, TimestampMs: 1_700_000_000_123,
		Schema: schema, KeyFieldIDs: []int{1}, Partitions: 1,
		Batches: []arrow.RecordBatch{b.NewRecordBatch()},
	}
	for i := range n {
		c.Records = append(c.Records, changelog.Record{Op: changelog.OpInsert, Before: changelog.NoRow,
			After: changelog.RowRef{Batch: 0, Row: int32(i)}})
	}
	if err := c.Prepare(); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestBatchEncodingDecodesWithEveryCodec(t *testing.T) {
	c := testChanges(t, 50)
	format, err := changelog.FormatByName("debezium-json")
	if err != nil {
		t.Fatal(err)
	}
	dec := kgo.DefaultDecompressor()
	for _, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		t.Run(codec, func(t *testing.T) {
			var enc batchEncoder
			raw, err := enc.encode(nil, batchSpec{baseOffset: 1000, leaderEpoch: 2, compression: codec,
				changes: c, format: format, recs: identityIdx(10, 30)})
			if err != nil {
				t.Fatal(err)
			}
			var b kmsg.RecordBatch
			if err := b.ReadFrom(raw); err != nil {
				t.Fatal(err)
			}
			if int(b.Length)+12 != len(raw) {
				t.Fatalf("length field %d, batch is %d bytes", b.Length, len(raw))
			}
			// Clients verify the CRC-32C over attributes..end.
			if uint32(b.CRC) != crc32cOf(raw[21:]) {
				t.Fatalf("bad CRC")
			}
			if b.FirstOffset != 1000 || b.LastOffsetDelta != 19 || b.NumRecords != 20 || b.PartitionLeaderEpoch != 2 ||
				b.FirstTimestamp != c.TimestampMs || b.MaxTimestamp != c.TimestampMs || b.ProducerID != -1 {
				t.Fatalf("header: %+v", b)
			}
			records := b.Records
			if codec != "none" {
				if b.Attributes&7 == 0 {
					t.Fatalf("codec %s: batch says uncompressed", codec)
				}
				records, err = dec.Decompress(b.Records, kgo.CompressionCodecType(b.Attributes&7))
				if err != nil {
					t.Fatal(err)
				}
			}
			for i := range 20 {
				var r kmsg.Record
				if err := r.ReadFrom(records); err != nil {
					t.Fatalf("record %d: %v", i, err)
				}
				records = records[r.Length+int32(varintLen(int64(r.Length))):]
				id := 10 + i
				if r.OffsetDelta != int32(i) || string(r.Key) != fmt.Sprintf(`{"id":%d}`, id) {
					t.Fatalf("record %d: delta %d key %s", i, r.OffsetDelta, r.Key)
				}
				if !bytes.Contains(r.Value, []byte(fmt.Sprintf(`"after":{"id":%d,"name":"name-%d"}`, id, id))) {
					t.Fatalf("record %d value %s", i, r.Value)
				}
				if len(r.Headers) != 3 || string(r.Headers[0].Value) != "77" || string(r.Headers[1].Value) != "3" || string(r.Headers[2].Value) != "+I" {
					t.Fatalf("record %d headers %+v", i, r.Headers)
				}
			}
			if len(records) != 0 {
				t.Fatalf("%d trailing bytes after the records", len(records))
			}
		})
	}
}

func TestBatchEncodingIsAllocationFreeInSteadyState(t *testing.T) {
	c := testChanges(t, 1000)
	format, _ := changelog.FormatByName("debezium-json")
	var enc batchEncoder
	dst := make([]byte, 0, 1<<20)
	spec := batchSpec{baseOffset: 0, compression: "none", changes: c, format: format, recs: identityIdx(0, 1000)}
	if _, err := enc.encode(dst[:0], spec); err != nil { // warm the encoder's buffers
		t.Fatal(err)
	}
	allocs := testing.AllocsPerRun(20, func() {
		if _, err := enc.encode(dst[:0], spec); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Fatalf("encoding a batch of 1000 records allocates %.1f times, want 0", allocs)
	}
}

func BenchmarkEncodeBatch(b *testing.B) {
	c := testChanges(b, 1000)
	format, _ := changelog.FormatByName("debezium-json")
	for _, codec := range []string{"none", "lz4", "zstd"} {
		b.Run(codec, func(b *testing.B) {
			var enc batchEncoder
			dst := make([]byte, 0, 1<<20)
			spec := batchSpec{compression: codec, changes: c, format: format, recs: identityIdx(0, 1000)}
			b.ReportAllocs()
			var n int
			for b.Loop() {
				out, err := enc.encode(dst[:0], spec)
				if err != nil {
					b.Fatal(err)
				}
				n = len(enc.records)
				_ = out
			}
			b.SetBytes(int64(n))
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "ns/record")
		})
	}
}

func identityIdx(from, to int) []int32 {
	out := make([]int32, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, int32(i))
	}
	return out
}

func varintLen(v int64) int {
	u := uint64(v<<1) ^ uint64(v>>63)
	n := 1
	for u >= 0x80 {
		u >>= 7
		n++
	}
	return n
}
