package protocol

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/s2"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/twmb/franz-go/pkg/kgo"
)

// maxDecompressedBatch bounds what one produced batch may decompress to:
// producers send batches of about 1 MiB (Kafka's message.max.bytes), and
// 64 times that is beyond any real compression ratio. franz-go's
// decompressor allows 2 GiB a batch, so a few hundred bytes of zstd or
// gzip could make the gateway allocate that much per partition.
const maxDecompressedBatch = 64 << 20

// decompressSlots bounds the batches being decompressed at once across
// the gateway, so that the memory decompression takes is bounded too
// (decompressSlots * maxDecompressedBatch); once decoded, a batch's
// records are accounted by the produce path's pending budget.
const decompressSlots = 4

var decompressing = make(chan struct{}, decompressSlots)

var errTooLarge = fmt.Errorf("a batch decompresses to more than %d bytes", maxDecompressedBatch)

// zstdDecoders decode with a memory bound; a zstd.Decoder is not safe for
// concurrent use, so each decompression takes one from the pool.
var zstdDecoders = sync.Pool{New: func() any {
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
		zstd.WithDecoderMaxMemory(maxDecompressedBatch))
	if err != nil {
		return err
	}
	return d
}}

// decompressBounded decompresses a produced batch's records (Kafka's codec
// numbering) to at most maxDecompressedBatch bytes.
func decompressBounded(src []byte, codec byte) ([]byte, error) {
	decompressing <- struct{}{}
	defer func() { <-decompressing }()
	switch kgo.CompressionCodecType(codec) {
	case kgo.CodecGzip:
		r, err := gzip.NewReader(bytes.NewReader(src))
		if err != nil {
			return nil, err
		}
		return readAtMost(r)
	case kgo.CodecLz4:
		return readAtMost(lz4.NewReader(bytes.NewReader(src)))
	case kgo.CodecZstd:
		v := zstdDecoders.Get()
		d, ok := v.(*zstd.Decoder)
		if !ok {
			return nil, fmt.Errorf("zstd decoder: %v", v)
		}
		defer zstdDecoders.Put(d)
		out, err := d.DecodeAll(src, nil)
		if errors.Is(err, zstd.ErrDecoderSizeExceeded) || len(out) > maxDecompressedBatch {
			return nil, errTooLarge
		}
		return out, err
	case kgo.CodecSnappy:
		// Snappy says its decoded length up front (per chunk in Xerial's
		// framing, which Java producers write): checked before decoding.
		n, err := snappyDecodedLen(src)
		if err != nil {
			return nil, err
		}
		if n > maxDecompressedBatch {
			return nil, errTooLarge
		}
		return decompressor.Decompress(src, kgo.CodecSnappy)
	}
	return nil, fmt.Errorf("unknown compression codec %d", codec)
}

// readAtMost reads r to its end, refusing more than maxDecompressedBatch.
func readAtMost(r io.Reader) ([]byte, error) {
	var out bytes.Buffer
	n, err := out.ReadFrom(io.LimitReader(r, maxDecompressedBatch+1))
	if err != nil {
		return nil, err
	}
	if n > maxDecompressedBatch {
		return nil, errTooLarge
	}
	return out.Bytes(), nil
}

// xerialMagic starts a snappy stream in Xerial's chunked framing.
var xerialMagic = []byte{130, 83, 78, 65, 80, 80, 89, 0}

// snappyDecodedLen is the decoded length a snappy block (or a Xerial stream
// of them) declares.
func snappyDecodedLen(src []byte) (int, error) {
	if len(src) <= 16 || !bytes.HasPrefix(src, xerialMagic) {
		return s2.DecodedLen(src)
	}
	total := 0
	for rem := src[16:]; len(rem) > 0; {
		if len(rem) < 4 {
			return 0, errors.New("malformed xerial snappy framing")
		}
		size := int(int32(binary.BigEndian.Uint32(rem)))
		rem = rem[4:]
		if size < 0 || size > len(rem) {
			return 0, errors.New("malformed xerial snappy framing")
		}
		n, err := s2.DecodedLen(rem[:size])
		if err != nil {
			return 0, err
		}
		if total += n; total > maxDecompressedBatch {
			return total, nil
		}
		rem = rem[size:]
	}
	return total, nil
}
