package cluster

// GroupShards is how many shards groups and transactional ids hash into:
// a coordinator takes over whole shards, loading their state at once, as a
// Kafka broker loads a __consumer_offsets partition (whose default count,
// offsets.topic.num.partitions, this is).
const GroupShards = 50

// FNV-1a's parameters: the hashes are written out rather than taken from
// hash/fnv so that a lookup on the fetch path allocates nothing.
const (
	fnv32Offset = 2166136261
	fnv32Prime  = 16777619
	fnv64Offset = 14695981039346656037
	fnv64Prime  = 1099511628211
)

// Shard is the shard of a group or transactional id.
func Shard(key string) int32 {
	h := uint32(fnv32Offset)
	for i := 0; i < len(key); i++ {
		h = (h ^ uint32(key[i])) * fnv32Prime
	}
	return int32(h % GroupShards)
}

// item is what is placed on the nodes: a topic partition ('p') or a group
// shard ('s').
type item struct {
	kind  byte
	n     int32 // the partition or the shard
	topic string
}

// owner picks, among nodes, the one whose hash with the item is highest:
// rendezvous hashing. Adding or removing a node moves only the items that
// node gains or held. No node: Node{ID: -1}, Kafka's "no leader".
func owner(nodes []Node, it item) Node {
	switch len(nodes) {
	case 0:
		return Node{ID: -1, Port: -1}
	case 1:
		return nodes[0] // a lone gateway hashes nothing
	}
	best, bestScore := nodes[0], uint64(0)
	for i, n := range nodes {
		s := score(n.ID, it)
		if i == 0 || s > bestScore {
			best, bestScore = n, s
		}
	}
	return best
}

// score is FNV-1a of the node id, the item's kind, number (both big
// endian) and topic, finished with a 64-bit avalanche (splitmix64's):
// fnv's low bits mix poorly over short inputs.
func score(id int32, it item) uint64 {
	h := uint64(fnv64Offset)
	put32 := func(v uint32) {
		for shift := 24; shift >= 0; shift -= 8 {
			h = (h ^ uint64(byte(v>>shift))) * fnv64Prime
		}
	}
	put32(uint32(id))
	h = (h ^ uint64(it.kind)) * fnv64Prime
	put32(uint32(it.n))
	for i := 0; i < len(it.topic); i++ {
		h = (h ^ uint64(it.topic[i])) * fnv64Prime
	}
	x := h
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

func partitionItem(topic string, partition int32) item {
	return item{kind: 'p', n: partition, topic: topic}
}

func shardItem(shard int32) item { return item{kind: 's', n: shard} }
