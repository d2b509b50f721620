package fetch

import (
	"testing"

	"github.com/lakegw/lakegw/offsets"
	"github.com/lakegw/lakegw/topics"
)

// A cached batch is found again only for the same bytes: the key names the
// topic's encoding (table, schema, format, key, partitions: topics'
// encodingOf), its records per batch and the compression, besides where
// the batch is (issue 12: caches keyed by everything that shapes the
// bytes).
func TestBatchKeyNamesWhatShapesTheBytes(t *testing.T) {
	const enc = "table=u schema=0 format=debezium-json key= partitions=1"
	type topicEnc struct {
		t   *topics.Topic
		enc *topics.Encoding
	}
	batchKeyOfFn := batchKeyOf
	topic := func(name, encoding string, batchRecords int) topicEnc {
		return topicEnc{&topics.Topic{Name: name, Config: topics.TopicConfig{BatchRecords: batchRecords}}, &topics.Encoding{Name: encoding}}
	}
	batchKeyOf := func(te topicEnc, p, epoch int32, base int64, compression string) batchKey {
		return batchKeyOf(te.t, te.enc, offsets.Segment{Partition: p, Epoch: epoch, SnapshotID: 7}, base, compression)
	}
	tp := topic("ns.t", enc, 1000)
	keyOfSegment := func(te topicEnc, seg offsets.Segment) batchKey { return batchKeyOfFn(te.t, te.enc, seg, 2000, "none") }
	key := batchKeyOf(tp, 0, 8, 2000, "none")
	if batchKeyOf(tp, 0, 8, 2000, "none") != key {
		t.Fatal("the same batch has two keys")
	}
	other := func(what string, k batchKey) {
		t.Helper()
		if k == key {
			t.Errorf("another %s, the same key %+v", what, key)
		}
	}
	other("compression", batchKeyOf(tp, 0, 8, 2000, "zstd"))
	other("epoch", batchKeyOf(tp, 0, 12, 2000, "none"))
	other("partition", batchKeyOf(tp, 1, 8, 2000, "none"))
	other("base offset", batchKeyOf(tp, 0, 8, 3000, "none"))
	other("batch size", batchKeyOf(topic("ns.t", enc, 500), 0, 8, 2000, "none"))
	other("encoding", batchKeyOf(topic("ns.t", "table=u schema=0 format=upsert key= partitions=1", 1000), 0, 8, 2000, "none"))
	other("topic", batchKeyOf(topic("ns.u", enc, 1000), 0, 8, 2000, "none"))
	// A merged prefix keeps the offsets and epoch of the snapshots it
	// replaces, and cuts other batches from the same bases.
	other("segment", keyOfSegment(tp, offsets.Segment{Partition: 0, Epoch: 8, SnapshotID: 9, Kind: offsets.KindCompactedPrefix}))
}
