package state

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/lakegw/lakegw/protocol/groups"
)

// BenchmarkSaveGroupOffsets measures what an OffsetCommit waits for: one
// SaveGroupOffsets of a few partitions of one group, which must be durable
// before the commit is acknowledged. Compare runs with benchstat to see
// what the store's synchronous mode costs a commit.
func BenchmarkSaveGroupOffsets(b *testing.B) {
	for _, parts := range []int{1, 16} {
		b.Run(fmt.Sprintf("partitions=%d", parts), func(b *testing.B) {
			ctx := context.Background()
			s := openTestStore(b)
			offs := make([]groups.CommittedOffset, parts)
			for i := range offs {
				offs[i] = groups.CommittedOffset{Group: "bench", Topic: "ns.t", Partition: int32(i), LeaderEpoch: -1}
			}
			b.ResetTimer()
			for n := 0; n < b.N; n++ {
				for i := range offs {
					offs[i].Offset = int64(n)
				}
				if err := s.SaveOffsets(ctx, offs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSaveGroupOffsetsConcurrent is many groups committing at once
// (8 per CPU), one partition each: concurrent saves share a transaction.
func BenchmarkSaveGroupOffsetsConcurrent(b *testing.B) {
	ctx := context.Background()
	s := openTestStore(b)
	var next atomic.Int64
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		o := groups.CommittedOffset{Group: fmt.Sprintf("bench-%d", next.Add(1)), Topic: "ns.t", LeaderEpoch: -1}
		for pb.Next() {
			o.Offset++
			if err := s.SaveOffsets(ctx, []groups.CommittedOffset{o}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
