package changelog

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/iceberg-go"
)

// KeyPartitions returns the partition of every row of b (all top-level
// columns of schema, in order) by the Kafka murmur2 hash of its key JSON,
// its fields named by names (StableKeyNames; nil: their names in schema),
// exactly as AssignPartitions does. lsm/ uses it to pick buckets, so
// that an LSM table's bucket is its topic partition.
func KeyPartitions(schema *iceberg.Schema, keyIDs []int, names []string, b arrow.RecordBatch, n int32) ([]int32, error) {
	out := make([]int32, b.NumRows())
	if n <= 1 {
		return out, nil
	}
	if len(keyIDs) == 0 {
		return nil, fmt.Errorf("key partitions: no key fields")
	}
	fn, err := keyAppender(schema, b, keyIDs, names)
	if err != nil {
		return nil, err
	}
	var buf []byte
	for i := range out {
		buf = fn(buf[:0], i)
		out[i] = partitionOf(buf, n)
	}
	return out, nil
}
