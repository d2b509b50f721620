package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/lakegw/lakegw/fetch"
	"github.com/lakegw/lakegw/topics"
)

// A large append read through the reader a chunk at a time (a stream, with
// the read-ahead and both cache tiers as lakegw serve runs them) gives the
// bytes reading it whole gives, from the start and from an offset inside
// a row group of the file; the records are the table's 20,000 rows in
// row groups of 3,000.
func TestStreamedAppendReadsAsWhole(t *testing.T) {
	tb := getTable(t, 20_000, 20_000, iceberg.Properties{"write.parquet.row-group-limit": "3000"})
	read := func(chunk, from int64) []byte {
		defaults := topics.DefaultTopicConfig()
		defaults.BatchRecords = 250
		g := openGatewayConfig(t, tb, topics.Config{Defaults: defaults, IndexDeriveMaxRecords: 5000, StreamChunkRecords: chunk})
		defer g.close()
		g.waitIndexed(t, tb.changes)
		r := mustReader(t, fetch.Config{CacheBytes: 4 << 20, DiskCacheDir: t.TempDir(), DiskCacheBytes: 1 << 30})
		tp := g.topic(t)
		var out []byte
		buf := make([]byte, 0, 1<<20)
		for off := from; off < tb.changes; {
			got, err := r.Read(context.Background(), tp, 0, off, 256<<10, "none", buf[:0])
			if err != nil {
				t.Fatal(err)
			}
			if len(got) == 0 {
				t.Fatalf("empty read at %d", off)
			}
			out = append(out, got...)
			off = nextOffsetOf(t, got)
		}
		return out
	}
	whole := read(-1, 0)
	if got := read(2400, 0); !bytes.Equal(got, whole) {
		t.Fatalf("streamed in chunks: %d bytes differ from the %d read whole", len(got), len(whole))
	}
	// From offset 7,600: in the fourth chunk (of 2,500 records: whole
	// batches), which starts inside the third row group.
	mid := read(-1, 7600)
	if got := read(2400, 7600); !bytes.Equal(got, mid) {
		t.Fatalf("streamed from 7600: %d bytes differ from the %d read whole", len(got), len(mid))
	}
	if len(mid) == 0 || len(mid) >= len(whole) {
		t.Fatalf("from 7600: %d bytes of %d", len(mid), len(whole))
	}
}
