package topics

import (
	"context"
	"fmt"

	"github.com/lakegw/lakegw/changelog"
	"github.com/lakegw/lakegw/derive"
	"github.com/lakegw/lakegw/offsets"
)

// defaultRawChunkRecords is the records per read of a raw topic when
// chunks are off (Config.StreamChunkRecords 0): a raw segment may be a
// compacted prefix of the whole topic, never read whole.
const defaultRawChunkRecords = 64 << 10

// rawChunk returns the chunk of a raw topic's segment that holds record
// first (an ordinal in seg), and the ordinal of its record 0. A raw
// topic's records are read by offset from the files of seg's partition
// (derive.ReadRaw), whatever snapshot added them: a compacted prefix is
// read like any segment, a chunk at a time.
func (t *Topic) rawChunk(ctx context.Context, seg offsets.Segment, enc *Encoding, first int64) (*changelog.Changes, int64, error) {
	size := t.chunkRecords
	if size <= 0 {
		size = defaultRawChunkRecords
	}
	base := first - first%size
	c, err := t.rawRange(ctx, seg, enc, base, size)
	if err == nil && first == base && base+size < seg.Count {
		// As for a streamed append: the next chunk is read while this
		// one's batches are encoded.
		go func() {
			_, _ = t.rawRange(t.lifetime, seg, enc, base+size, size) // the fetch that asks meets any error
		}()
	}
	return c, base, err
}

// rawRange reads and caches the records [base, base+size) of seg (fewer at
// its end).
func (t *Topic) rawRange(ctx context.Context, seg offsets.Segment, enc *Encoding, base, size int64) (*changelog.Changes, error) {
	key := t.changesKey(seg.SnapshotID, seg.Kind, enc)
	key.chunk, key.partition = base/size+1, seg.Partition
	n := min(size, seg.Count-base)
	return t.derived(ctx, seg, key, func(ctx context.Context) (*changelog.Changes, error) {
		c, err := derive.ReadRaw(ctx, t.Table(), t.raw, seg.Partition, t.Index.Partitions(), seg.BaseOffset+base, n)
		if err != nil {
			return nil, fmt.Errorf("%s partition %d: %w", t.Name, seg.Partition, err)
		}
		c.SnapshotID, c.SequenceNumber, c.TimestampMs = seg.SnapshotID, seg.SequenceNumber, seg.TimestampMs
		return c, nil
	})
}
