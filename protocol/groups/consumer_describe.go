package groups

import (
	"context"
	"slices"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ConsumerGroupDescribe handles a ConsumerGroupDescribe request (v0-v1),
// what `kafka-consumer-groups --describe` and the Admin client send for
// consumer groups: epochs, the assignor, and each member's current and
// target assignment. A classic group is GROUP_ID_NOT_FOUND ("not a
// consumer group"), from which the Admin client falls back to
// DescribeGroups, as with Kafka.
//
// Version notes: v1 adds each member's type (1: consumer protocol; classic
// members never join a consumer group here).
func (c *Coordinator) ConsumerGroupDescribe(_ context.Context, req *kmsg.ConsumerGroupDescribeRequest) *kmsg.ConsumerGroupDescribeResponse {
	resp := kmsg.NewPtrConsumerGroupDescribeResponse()
	resp.Version = req.Version
	code := c.statusCode()
	view := c.topicView()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, name := range req.Groups {
		dg := kmsg.NewConsumerGroupDescribeResponseGroup()
		dg.Group = name
		g := c.groups[name]
		switch {
		case code != 0:
			dg.ErrorCode = code
		case c.ownershipCode(name) != 0:
			dg.ErrorCode = c.ownershipCode(name)
		case !ValidGroupID(name):
			dg.ErrorCode = kerr.InvalidGroupID.Code
		case g == nil && c.offsets.hasGroup(name):
			// Offsets only: Kafka keeps such a group as a classic one.
			dg.ErrorCode = kerr.GroupIDNotFound.Code
			dg.ErrorMessage = kmsg.StringPtr("Group " + name + " is not a consumer group.")
		case g == nil:
			dg.ErrorCode = kerr.GroupIDNotFound.Code
			dg.ErrorMessage = kmsg.StringPtr("Group " + name + " not found.")
		case g.consumer == nil:
			dg.ErrorCode = kerr.GroupIDNotFound.Code
			dg.ErrorMessage = kmsg.StringPtr("Group " + name + " is not a consumer group.")
		default:
			g.consumer.describe(&dg, view)
		}
		resp.Groups = append(resp.Groups, dg)
	}
	return resp
}

func (cg *consumerGroup) describe(dg *kmsg.ConsumerGroupDescribeResponseGroup, view topicView) {
	dg.State = cg.stateName()
	dg.Epoch = cg.epoch
	dg.AssignmentEpoch = cg.assignmentEpoch
	dg.AssignorName = cg.assignor
	ids := make([]string, 0, len(cg.members))
	for id := range cg.members {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		m := cg.members[id]
		dm := kmsg.NewConsumerGroupDescribeResponseGroupMember()
		dm.MemberID = m.id
		dm.InstanceID = m.instanceID
		dm.RackID = m.rackID
		dm.MemberEpoch = m.epoch
		dm.ClientID = m.clientID
		dm.ClientHost = m.clientHost
		dm.SubscribedTopics = slices.Clone(m.subscribedNames)
		if dm.SubscribedTopics == nil {
			dm.SubscribedTopics = []string{}
		}
		dm.SubscribedTopicRegex = m.subscribedRegex
		dm.Assignment = describedAssignment(m.assigned, view)
		dm.TargetAssignment = describedAssignment(cg.target[id], view)
		dm.MemberType = 1
		dg.Members = append(dg.Members, dm)
	}
}

func describedAssignment(a topicPartitions, view topicView) kmsg.Assignment {
	out := kmsg.NewAssignment()
	out.TopicPartitions = []kmsg.AssignmentTopicPartition{}
	for _, t := range sortedTopicIDs(a) {
		tp := kmsg.NewAssignmentTopicPartition()
		tp.TopicID = t
		tp.Topic = view.byID[t].Name
		tp.Partitions = slices.Clone(a[t])
		out.TopicPartitions = append(out.TopicPartitions, tp)
	}
	return out
}
