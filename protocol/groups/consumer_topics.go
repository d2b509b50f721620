package groups

import (
	"bytes"
	"maps"
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
	// AllTopics returns every topic the gateway serves, sorted by name.
	AllTopics() []TopicInfo
}

// topicView is one look at the gateway's topics, taken before the
// coordinator's lock so that the lock never waits on the registry.
type topicView struct {
	byName map[string]TopicInfo
	byID   map[[16]byte]TopicInfo
	names  []string // sorted

	// seq orders views by when they were taken; ver, set under the lock by
	// adoptView, changes only when the topics do, so that members resolve
	// their subscriptions again only then.
	seq uint64
	ver uint64
}

func (c *Coordinator) topicView() topicView {
	v := topicView{byName: map[string]TopicInfo{}, byID: map[[16]byte]TopicInfo{}, seq: c.viewSeq.Add(1)}
	if c.opts.Topics == nil {
		return v
	}
	for _, t := range c.opts.Topics.AllTopics() {
		if _, dup := v.byName[t.Name]; dup {
			continue
		}
		v.byName[t.Name] = t
		if _, ok := v.byID[t.ID]; !ok {
			// One table under two names: the first name, as Fetch by id
			// (topics.Registry.TopicByID) serves it.
			v.byID[t.ID] = t
		}
		v.names = append(v.names, t.Name)
	}
	slices.Sort(v.names)
	return v
}

// adoptView makes v the coordinator's view unless a newer one is already
// there, and returns the view to use; called with c.mu held. The timer
// loop assigns with it when members expire.
func (c *Coordinator) adoptView(v topicView) topicView {
	switch {
	case v.seq < c.lastView.seq:
		return c.lastView
	case maps.Equal(v.byName, c.lastView.byName):
		c.lastView.seq = v.seq
		return c.lastView
	}
	v.ver = c.lastView.ver + 1
	c.lastView = v
	return v
}

// subscribed resolves what the members of cg subscribe to: each member's
// topic ids (sorted, resolved again only when its subscription or the
// topics changed) and the partition count of each subscribed topic.
func (v topicView) subscribed(cg *consumerGroup) (map[string][][16]byte, map[[16]byte]int32) {
	perMember := make(map[string][][16]byte, len(cg.members))
	partitions := make(map[[16]byte]int32)
	for id, m := range cg.members {
		if !m.resolved || m.resolvedVer != v.ver {
			m.topicIDs = m.topicIDs[:0]
			for _, name := range v.names {
				if m.subscribes(name) {
					m.topicIDs = append(m.topicIDs, v.byName[name].ID)
				}
			}
			slices.SortFunc(m.topicIDs, func(a, b [16]byte) int { return bytes.Compare(a[:], b[:]) })
			m.topicIDs = slices.Compact(m.topicIDs)
			m.resolved, m.resolvedVer = true, v.ver
		}
		for _, t := range m.topicIDs {
			partitions[t] = v.byID[t].Partitions
		}
		perMember[id] = m.topicIDs
	}
	return perMember, partitions
}
