package produce

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// BenchmarkRawCommit is one group commit of a raw topic as make bench's
// produce pass makes them: 4 partitions, 2,500 records each of a 16-byte
// key and a ~200-byte JSON value (the Parquet encoding of the data files,
// the manifests and the catalog commit; no commit interval to wait).
func BenchmarkRawCommit(b *testing.B) {
	cat, _ := openCatalog(b)
	s, _ := newServiceWith(b, cat, Config{CommitInterval: time.Microsecond})
	ctx := context.Background()
	if err := s.CreateRawTopic(ctx, "bench", 4, nil, false); err != nil {
		b.Fatal(err)
	}
	const perPartition = 2500
	batches := make([]Batch, 4)
	var bytes int64
	for p := range batches {
		recs := make([]Record, perPartition)
		for i := range recs {
			n := p*perPartition + i
			recs[i] = Record{TimestampMs: 1700000000000 + int64(n), Key: []byte(fmt.Sprintf("order-%010d", n)),
				Value: []byte(fmt.Sprintf(`{"id":%d,"customer":"c%06d","status":"NEW","amount":%d.%02d,"note":"%s"}`,
					n, n%100000, n%10000, n%100, strings.Repeat("x", 120)))}
			bytes += int64(len(recs[i].Key) + len(recs[i].Value))
		}
		batches[p] = Batch{Partition: int32(p), ProducerID: NoProducer, Records: recs}
	}
	b.SetBytes(bytes)
	b.ReportAllocs()
	for b.Loop() {
		res, _ := s.Produce(ctx, "bench", batches)
		for _, r := range res {
			if r.Err != nil {
				b.Fatal(r.Err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/(4*perPartition), "ns/record")
}
