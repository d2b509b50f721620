package groups

import (
	"bytes"
	"maps"
	"slices"
	"sort"
)

// The server-side assignors of the consumer protocol, by the names
// clients give in group.remote.assignor. Kafka's default is the first.
const (
	assignorUniform = "uniform"
	assignorRange   = "range"
)

func knownAssignor(name string) bool { return name == assignorUniform || name == assignorRange }

// assignInput is what an assignor sees: each member's subscribed topics
// (by id), every subscribed topic's partition count, and the previous
// target assignment, which the uniform assignor keeps what it can of.
type assignInput struct {
	members    []string // sorted member ids
	subscribed map[string][][16]byte
	partitions map[[16]byte]int32
	previous   map[string]topicPartitions
}

func assign(name string, in assignInput) map[string]topicPartitions {
	if name == assignorRange {
		return assignRange(in)
	}
	return assignUniform(in)
}

// assignRange gives each topic's members (sorted by id) contiguous ranges
// of its partitions, the first members one more when they do not divide
// evenly: members subscribed to the same topics get the same partition
// numbers of each, which co-partitioned joins need.
func assignRange(in assignInput) map[string]topicPartitions {
	out := emptyAssignment(in.members)
	byTopic := make(map[[16]byte][]string)
	for _, id := range in.members {
		for _, t := range in.subscribed[id] {
			byTopic[t] = append(byTopic[t], id)
		}
	}
	for t, members := range byTopic {
		n := in.partitions[t]
		per, extra := n/int32(len(members)), n%int32(len(members))
		next := int32(0)
		for i, id := range members {
			count := per
			if int32(i) < extra {
				count++
			}
			for p := next; p < next+count; p++ {
				out[id].add(t, p)
			}
			next += count
		}
	}
	return out
}

// assignUniform spreads partitions so that no subscribed member holds two
// more than another that could take one, moving as few as it can: each
// partition stays with its previous owner if that member still subscribes
// to it, new partitions go to the least loaded member, and then partitions
// move from the most to the least loaded members until that holds.
func assignUniform(in assignInput) map[string]topicPartitions {
	// Members by index into in.members (sorted ids): loads and eligibility
	// are slices, as the balancing moves scan them many times.
	n := len(in.members)
	index := make(map[string]int, n)
	for i, id := range in.members {
		index[id] = i
	}
	held := make([]topicPartitions, n)
	for i := range held {
		held[i] = make(topicPartitions)
	}
	load := make([]int, n)
	eligible := make(map[[16]byte][]int) // topic -> subscribed members, by index
	for i, id := range in.members {
		for _, t := range in.subscribed[id] {
			eligible[t] = append(eligible[t], i)
		}
	}
	topics := slices.SortedFunc(maps.Keys(eligible), func(a, b [16]byte) int { return bytes.Compare(a[:], b[:]) })

	prevOwner := make(map[ownedPartition]int)
	for id, prev := range in.previous {
		i, ok := index[id]
		if !ok {
			continue // left the group
		}
		for t, ps := range prev {
			if slices.Contains(in.subscribed[id], t) {
				for _, p := range ps {
					prevOwner[ownedPartition{t, p}] = i
				}
			}
		}
	}
	var unowned []ownedPartition
	for _, t := range topics {
		for p := int32(0); p < in.partitions[t]; p++ {
			owner, ok := prevOwner[ownedPartition{t, p}]
			if !ok {
				unowned = append(unowned, ownedPartition{t, p})
				continue
			}
			held[owner][t] = append(held[owner][t], p) // p ascends: stays sorted
			load[owner]++
		}
	}
	leastLoaded := func(t [16]byte) int {
		best := -1
		for _, i := range eligible[t] {
			if best < 0 || load[i] < load[best] {
				best = i
			}
		}
		return best
	}
	for _, tp := range unowned {
		i := leastLoaded(tp.topic)
		held[i].add(tp.topic, tp.partition)
		load[i]++
	}
	// Balance: move partitions from the most loaded members to eligible
	// ones holding at least two fewer, until no such move exists. Each move
	// lowers the sum of squared loads, so this ends; a pass moves all it
	// can from each member in turn, so few passes are needed, and a move
	// costs a scan of the topic's members (BenchmarkUniformAssignor).
	byLoad := make([]int, n)
	for i := range byLoad {
		byLoad[i] = i
	}
	for moved := true; moved; {
		moved = false
		sort.SliceStable(byLoad, func(a, b int) bool { return load[byLoad[a]] > load[byLoad[b]] })
		for _, from := range byLoad {
			for _, t := range topics {
				for len(held[from][t]) > 0 {
					to := leastLoaded(t)
					if load[to] > load[from]-2 {
						break
					}
					ps := held[from][t]
					held[from][t] = ps[:len(ps)-1]
					held[to].add(t, ps[len(ps)-1])
					load[from]--
					load[to]++
					moved = true
				}
				if len(held[from][t]) == 0 {
					delete(held[from], t)
				}
			}
		}
	}
	out := make(map[string]topicPartitions, n)
	for i, id := range in.members {
		out[id] = held[i]
	}
	return out
}

func emptyAssignment(members []string) map[string]topicPartitions {
	out := make(map[string]topicPartitions, len(members))
	for _, id := range members {
		out[id] = make(topicPartitions)
	}
	return out
}
