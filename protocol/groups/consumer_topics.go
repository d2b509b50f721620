package groups

import (
	"bytes"
	"slices"
)

// TopicInfo is a topic as the consumer group protocol names it: by id.
type TopicInfo struct {
	Name       string
	ID         [16]byte
	Partitions int32
}

// Topics lists the gateway's topics for the consumer group protocol
// (KIP-848), whose assignments name topics by id, and for OffsetCommit and
// OffsetFetch v10, whose requests do.
type Topics interface {
	// AllTopics returns every topic the gateway serves.
	AllTopics() []TopicInfo
}

// topicView is one heartbeat's look at the gateway's topics, taken before
// the coordinator's lock so that the lock never waits on the registry.
type topicView struct {
	byName map[string]TopicInfo
	byID   map[[16]byte]TopicInfo
	names  []string // sorted
}

func (c *Coordinator) topicView() topicView {
	v := topicView{byName: map[string]TopicInfo{}, byID: map[[16]byte]TopicInfo{}}
	if c.opts.Topics == nil {
		return v
	}
	for _, t := range c.opts.Topics.AllTopics() {
		v.byName[t.Name] = t
		v.byID[t.ID] = t
		v.names = append(v.names, t.Name)
	}
	slices.Sort(v.names)
	return v
}

// subscribedTopics resolves what the members of cg subscribe to: each
// member's topic ids (sorted) and the partition count of each topic.
func (v topicView) subscribed(cg *consumerGroup) (map[string][][16]byte, map[[16]byte]int32) {
	perMember := make(map[string][][16]byte, len(cg.members))
	partitions := make(map[[16]byte]int32)
	for id, m := range cg.members {
		var ids [][16]byte
		for _, name := range v.names {
			if m.subscribes(name) {
				t := v.byName[name]
				ids = append(ids, t.ID)
				partitions[t.ID] = t.Partitions
			}
		}
		slices.SortFunc(ids, func(a, b [16]byte) int { return bytes.Compare(a[:], b[:]) })
		perMember[id] = ids
	}
	return perMember, partitions
}
