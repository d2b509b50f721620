package groups

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetDelete handles an OffsetDelete request (v0), as
// `kafka-consumer-groups --delete-offsets` sends it: the committed offsets
// of the partitions named are deleted, durably, except those of a topic a
// member of the group subscribes to (GROUP_SUBSCRIBED_TO_TOPIC). A group
// with members of another protocol than "consumer" is NON_EMPTY_GROUP; an
// unknown one GROUP_ID_NOT_FOUND.
func (c *Coordinator) OffsetDelete(ctx context.Context, req *kmsg.OffsetDeleteRequest) *kmsg.OffsetDeleteResponse {
	resp := kmsg.NewPtrOffsetDeleteResponse()
	resp.Version = req.Version
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetDeleteResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetDeleteResponseTopicPartition()
			rp.Partition = p.Partition
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	resp.ErrorCode = c.offsetDelete(ctx, req.Group, resp)
	return resp
}

// offsetDelete deletes what resp names (setting its partitions' codes)
// under lockGroup, and returns the group-level code.
func (c *Coordinator) offsetDelete(ctx context.Context, name string, resp *kmsg.OffsetDeleteResponse) int16 {
	offs, gr, unlock, code := c.lockGroup(ctx, name)
	if code != 0 {
		return code
	}
	defer unlock()
	var subscribed map[string]bool
	if gr != nil && !gr.empty() {
		var ok bool
		if subscribed, ok = gr.subscribedTopics(); !ok || gr.protocolType != "consumer" {
			return kerr.NonEmptyGroup.Code
		}
	}
	var del []TopicPartition
	for i := range resp.Topics {
		rt := &resp.Topics[i]
		for j := range rt.Partitions {
			if subscribed[rt.Topic] {
				rt.Partitions[j].ErrorCode = kerr.GroupSubscribedToTopic.Code
				continue
			}
			del = append(del, TopicPartition{rt.Topic, rt.Partitions[j].Partition})
		}
	}
	if len(del) == 0 || offs == nil {
		return 0
	}
	if c.store != nil {
		if err := c.store.DeletePartitionOffsets(ctx, name, del); err != nil {
			c.log.Warn().Err(err).Str("group", name).Msg("delete offsets: the store failed; nothing changed")
			return storeFailureCode(err)
		}
	}
	c.offsets.mu.Lock()
	for _, p := range del {
		if ps := offs.parts[p.Topic]; ps != nil {
			if _, ok := ps[p.Partition]; ok {
				delete(ps, p.Partition)
				offs.count--
			}
			if len(ps) == 0 {
				delete(offs.parts, p.Topic)
			}
		}
	}
	if len(offs.parts) == 0 && c.offsets.groups[name] == offs {
		delete(c.offsets.groups, name)
	}
	c.offsets.mu.Unlock()
	c.log.Info().Str("group", name).Int("partitions", len(del)).Msg("committed offsets deleted")
	return 0
}

// subscribedTopics are the topics the group's members subscribe to, read
// from their consumer protocol metadata for the group's protocol; ok is
// false when a member's is unreadable (then no offset may be deleted: any
// topic may be its). Called with c.mu held.
func (g *group) subscribedTopics() (topics map[string]bool, ok bool) {
	topics = map[string]bool{}
	if g.consumer != nil {
		for _, name := range g.c.lastView.names {
			for _, m := range g.consumer.members {
				if m.subscribes(name) {
					topics[name] = true
				}
			}
		}
		for _, m := range g.consumer.members {
			for _, name := range m.subscribedNames {
				topics[name] = true
			}
		}
		return topics, true
	}
	for _, m := range g.members {
		var md kmsg.ConsumerMemberMetadata
		if err := md.ReadFrom(m.metadata(g.protocol)); err != nil {
			return nil, false
		}
		for _, t := range md.Topics {
			topics[t] = true
		}
	}
	return topics, true
}
