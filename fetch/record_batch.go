package fetch

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"strconv"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lakegw/lakegw/changelog"
)

var crc32c = crc32.MakeTable(crc32.Castagnoli)

// Kafka RecordBatch v2 header layout, by byte offset.
const (
	batchHeaderLen   = 61
	offLength        = 8
	offLeaderEpoch   = 12
	offMagic         = 16
	offCRC           = 17
	offAttributes    = 21
	offLastDelta     = 23
	offFirstTs       = 27
	offMaxTs         = 35
	offProducerID    = 43
	offProducerEpoch = 51
	offBaseSequence  = 53
	offRecordCount   = 57
)

// Header keys every record carries (DESIGN.md: where a record came from).
const (
	HeaderSnapshotID     = "lakegw.snapshot-id"
	HeaderSequenceNumber = "lakegw.sequence-number"
	HeaderOp             = "lakegw.op"
)

// batchEncoder builds one RecordBatch at a time. It keeps its buffers
// between batches so that steady-state encoding does not allocate; one
// encoder is used by one goroutine at a time (they live in a sync.Pool).
type batchEncoder struct {
	records []byte // the encoded records, uncompressed
	rec     []byte // one record's body, before its length prefix
	key     []byte
	value   []byte
	num     []byte
	comp    bytes.Buffer
}

// compressors are built once: kgo's default compressor keeps pooled codec
// state internally, and it knows Kafka's framing of every codec.
var compressors = func() map[string]kgo.Compressor {
	m := map[string]kgo.Compressor{}
	for name, codec := range map[string]kgo.CompressionCodec{
		"gzip": kgo.GzipCompression(), "snappy": kgo.SnappyCompression(),
		"lz4": kgo.Lz4Compression(), "zstd": kgo.ZstdCompression(),
	} {
		c, err := kgo.DefaultCompressor(codec)
		if err != nil {
			// Only reachable if franz-go drops a codec; fail at start-up
			// rather than serve uncompressed data under a compressed name.
			panic(fmt.Sprintf("franz-go compressor %s: %v", name, err))
		}
		m[name] = c
	}
	return m
}()

// batchSpec says what goes into one batch.
type batchSpec struct {
	baseOffset  int64
	leaderEpoch int32
	compression string
	changes     *changelog.Changes
	format      changelog.Format
	// recs are the indexes into changes.Records of this batch's records,
	// in offset order.
	recs []int32
}

// encode appends the complete batch (header, CRC, possibly compressed
// records) to dst. Uncompressed records are written straight into dst.
func (e *batchEncoder) encode(dst []byte, s batchSpec) ([]byte, error) {
	c := s.changes
	ts := c.TimestampMs
	compress := s.compression != "" && s.compression != "none"
	var comp kgo.Compressor
	if compress {
		var ok bool
		if comp, ok = compressors[s.compression]; !ok {
			return dst, fmt.Errorf("unknown compression %q", s.compression)
		}
	}
	snapID := strconv.AppendInt(e.num[:0], c.SnapshotID, 10)
	seqStart := len(snapID)
	seq := strconv.AppendInt(snapID, c.SequenceNumber, 10)
	e.num = seq
	snapID, seq = seq[:seqStart], seq[seqStart:]

	start := len(dst)
	dst = append(dst, zeroHeader[:]...)
	records := dst
	if compress {
		records = e.records[:0]
	}
	// A raw topic's records carry their producer's timestamps and
	// headers; every other record the snapshot's commit time and
	// lakegw's provenance headers.
	own, _ := s.format.(changelog.RecordAttributes)
	maxTs := ts
	if own != nil && len(s.recs) > 0 {
		ts = own.RecordTimestamp(c, &c.Records[s.recs[0]])
		maxTs = ts
	}
	for i, ri := range s.recs {
		r := &c.Records[ri]
		var hasKey, hasValue bool
		e.key, hasKey = s.format.AppendKey(e.key[:0], c, r)
		e.value, hasValue = s.format.AppendValue(e.value[:0], c, r)
		b := e.rec[:0]
		b = append(b, 0) // attributes
		if own == nil {
			b = binary.AppendVarint(b, 0) // timestamp delta: a snapshot has one commit time
		} else {
			rts := own.RecordTimestamp(c, r)
			maxTs = max(maxTs, rts)
			b = binary.AppendVarint(b, rts-ts)
		}
		b = binary.AppendVarint(b, int64(i))
		b = appendBytesField(b, e.key, hasKey)
		b = appendBytesField(b, e.value, hasValue)
		if own == nil {
			b = binary.AppendVarint(b, 3)
			b = appendHeader(b, HeaderSnapshotID, snapID)
			b = appendHeader(b, HeaderSequenceNumber, seq)
			b = appendHeaderString(b, HeaderOp, r.Op.Header())
		} else {
			hs := own.RecordHeaders(c, r)
			b = binary.AppendVarint(b, int64(len(hs)))
			for _, h := range hs {
				b = binary.AppendVarint(b, int64(len(h.Key)))
				b = append(b, h.Key...)
				b = appendBytesField(b, h.Value, h.Value != nil)
			}
		}
		e.rec = b
		records = binary.AppendVarint(records, int64(len(b)))
		records = append(records, b...)
	}

	attrs := int16(0)
	if compress {
		e.records = records
		payload := records
		e.comp.Reset()
		if out, codec := comp.Compress(&e.comp, records); codec != kgo.CodecNone {
			attrs = int16(codec)
			payload = out
		}
		dst = append(dst, payload...)
	} else {
		dst = records
	}

	h := dst[start:]
	n := int32(len(s.recs))
	binary.BigEndian.PutUint64(h[0:], uint64(s.baseOffset))
	binary.BigEndian.PutUint32(h[offLength:], uint32(len(h)-12))
	binary.BigEndian.PutUint32(h[offLeaderEpoch:], uint32(s.leaderEpoch))
	h[offMagic] = 2
	binary.BigEndian.PutUint16(h[offAttributes:], uint16(attrs))
	binary.BigEndian.PutUint32(h[offLastDelta:], uint32(n-1))
	binary.BigEndian.PutUint64(h[offFirstTs:], uint64(ts))
	binary.BigEndian.PutUint64(h[offMaxTs:], uint64(maxTs))
	binary.BigEndian.PutUint64(h[offProducerID:], ^uint64(0))
	binary.BigEndian.PutUint16(h[offProducerEpoch:], ^uint16(0))
	binary.BigEndian.PutUint32(h[offBaseSequence:], ^uint32(0))
	binary.BigEndian.PutUint32(h[offRecordCount:], uint32(n))
	binary.BigEndian.PutUint32(h[offCRC:], crc32cOf(h[offAttributes:]))
	return dst, nil
}

// zeroHeader reserves a batch header, filled once the records are in.
var zeroHeader [batchHeaderLen]byte

func appendBytesField(b, v []byte, present bool) []byte {
	if !present {
		return binary.AppendVarint(b, -1)
	}
	b = binary.AppendVarint(b, int64(len(v)))
	return append(b, v...)
}

func appendHeader(b []byte, key string, v []byte) []byte {
	b = binary.AppendVarint(b, int64(len(key)))
	b = append(b, key...)
	b = binary.AppendVarint(b, int64(len(v)))
	return append(b, v...)
}

func appendHeaderString(b []byte, key, v string) []byte {
	b = binary.AppendVarint(b, int64(len(key)))
	b = append(b, key...)
	b = binary.AppendVarint(b, int64(len(v)))
	return append(b, v...)
}

func crc32cOf(b []byte) uint32 { return crc32.Checksum(b, crc32c) }
