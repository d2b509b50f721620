package changelog

// murmur2 is Kafka's murmur2 hash (org.apache.kafka.common.utils.Utils), so
// that lakegw spreads keys over partitions as Kafka's default partitioner
// would.
func murmur2(data []byte) int32 {
	const (
		seed uint32 = 0x9747b28c
		m    uint32 = 0x5bd1e995
		r           = 24
	)
	n := len(data)
	h := seed ^ uint32(n)
	i := 0
	for ; i+4 <= n; i += 4 {
		k := uint32(data[i]) | uint32(data[i+1])<<8 | uint32(data[i+2])<<16 | uint32(data[i+3])<<24
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
	}
	switch n - i {
	case 3:
		h ^= uint32(data[i+2]) << 16
		fallthrough
	case 2:
		h ^= uint32(data[i+1]) << 8
		fallthrough
	case 1:
		h ^= uint32(data[i])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return int32(h)
}

// partitionOf is Kafka's default partitioner: toPositive(murmur2(key)) % n.
func partitionOf(key []byte, n int32) int32 {
	if n <= 1 {
		return 0
	}
	return (murmur2(key) & 0x7fffffff) % n
}
