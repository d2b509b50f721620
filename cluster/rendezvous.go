package cluster

import (
	"encoding/binary"
	"hash/fnv"
)

// GroupShards is how many shards groups and transactional ids hash into:
// a coordinator takes over whole shards, loading their state at once, as a
// Kafka broker loads a __consumer_offsets partition (whose default count,
// offsets.topic.num.partitions, this is).
const GroupShards = 50

// Shard is the shard of a group or transactional id.
func Shard(key string) int32 {
	h := fnv.New32a()
	h.Write([]byte(key))
	return int32(h.Sum32() % GroupShards)
}

// owner picks, among nodes, the one whose hash with the item is highest:
// rendezvous hashing. Adding or removing a node moves only the items that
// node gains or held. No node: Node{ID: -1}, Kafka's "no leader".
func owner(nodes []Node, item []byte) Node {
	if len(nodes) == 0 {
		return Node{ID: -1, Port: -1}
	}
	best, bestScore := nodes[0], uint64(0)
	for i, n := range nodes {
		s := score(n.ID, item)
		if i == 0 || s > bestScore {
			best, bestScore = n, s
		}
	}
	return best
}

func score(id int32, item []byte) uint64 {
	h := fnv.New64a()
	var b [4]byte
	binary.BigEndian.PutUint32(b[:], uint32(id))
	h.Write(b[:])
	h.Write(item)
	// fnv's low bits mix poorly over short inputs: finish with a
	// 64-bit avalanche (splitmix64's) so scores spread evenly.
	x := h.Sum64()
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

func partitionItem(topic string, partition int32) []byte {
	b := make([]byte, 0, len(topic)+5)
	b = append(b, 'p')
	b = binary.BigEndian.AppendUint32(b, uint32(partition))
	return append(b, topic...)
}

func shardItem(shard int32) []byte {
	return binary.BigEndian.AppendUint32([]byte{'s'}, uint32(shard))
}
