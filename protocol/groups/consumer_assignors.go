package groups

import (
	"bytes"
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
	out := emptyAssignment(in.members)
	eligible := make(map[[16]byte][]string) // topic -> subscribed members, sorted
	for _, id := range in.members {
		for _, t := range in.subscribed[id] {
			eligible[t] = append(eligible[t], id)
		}
	}
	topics := make([][16]byte, 0, len(eligible))
	for t := range eligible {
		topics = append(topics, t)
	}
	slices.SortFunc(topics, func(a, b [16]byte) int { return bytes.Compare(a[:], b[:]) })

	prevOwner := make(map[ownedPartition]string)
	for id, prev := range in.previous {
		if _, ok := out[id]; !ok {
			continue // left the group
		}
		for t, ps := range prev {
			if slices.Contains(in.subscribed[id], t) {
				for _, p := range ps {
					prevOwner[ownedPartition{t, p}] = id
				}
			}
		}
	}
	load := make(map[string]int, len(in.members))
	var unowned []ownedPartition
	for _, t := range topics {
		for p := int32(0); p < in.partitions[t]; p++ {
			owner := prevOwner[ownedPartition{t, p}]
			if owner == "" {
				unowned = append(unowned, ownedPartition{t, p})
				continue
			}
			out[owner].add(t, p)
			load[owner]++
		}
	}
	leastLoaded := func(t [16]byte) string {
		best := ""
		for _, id := range eligible[t] {
			if best == "" || load[id] < load[best] {
				best = id
			}
		}
		return best
	}
	for _, tp := range unowned {
		id := leastLoaded(tp.topic)
		out[id].add(tp.topic, tp.partition)
		load[id]++
	}
	// Balance: move a partition from a member to an eligible one holding
	// at least two fewer, until no such move exists. Each move lowers the
	// sum of squared loads, so this ends.
	for moved := true; moved; {
		moved = false
		order := slices.Clone(in.members)
		sort.SliceStable(order, func(i, j int) bool { return load[order[i]] > load[order[j]] })
		for _, from := range order {
			for _, t := range topics {
				ps := out[from][t]
				if len(ps) == 0 {
					continue
				}
				to := leastLoaded(t)
				if load[to] > load[from]-2 {
					continue
				}
				p := ps[len(ps)-1]
				out[from][t] = ps[:len(ps)-1]
				if len(out[from][t]) == 0 {
					delete(out[from], t)
				}
				out[to].add(t, p)
				load[from]--
				load[to]++
				moved = true
				break
			}
			if moved {
				break
			}
		}
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
