package protocol

import (
	"github.com/google/uuid"

	"github.com/lakegw/lakegw/protocol/groups"
	"github.com/lakegw/lakegw/topics"
)

// GroupTopics lists the registry's topics for the group coordinator, which
// names topics by id in the consumer group protocol (KIP-848) and in
// OffsetCommit/OffsetFetch v10: each topic's Topic.ID, as Metadata gives it.
func GroupTopics(reg *topics.Registry) groups.Topics { return groupTopics{reg} }

type groupTopics struct{ reg *topics.Registry }

func (g groupTopics) AllTopics() []groups.TopicInfo {
	all := g.reg.Topics()
	out := make([]groups.TopicInfo, 0, len(all))
	for _, t := range all {
		if t.ID == (uuid.UUID{}) {
			continue // not opened yet: no id to name it by
		}
		out = append(out, groups.TopicInfo{Name: t.Name, ID: t.ID, Partitions: t.Index.Partitions()})
	}
	return out
}
