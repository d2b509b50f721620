package groups

import (
	"cmp"
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DescribeGroups handles a DescribeGroups request (v0-v6). Member
// metadata and assignments are shown only while the group is Stable, as
// in Kafka, because only then do they belong to one generation.
//
// Version notes: v3 adds authorized operations (left unset: no ACLs
// here); v4 adds the members' group.instance.id; v5 is flexible; v6 adds
// an error message (KIP-1043). A group that does not exist, or is not a
// classic group (a KIP-848 consumer group: ConsumerGroupDescribe describes
// it), is GROUP_ID_NOT_FOUND from v6 and Dead without error before, as
// Kafka 4 answers.
func (c *Coordinator) DescribeGroups(_ context.Context, req *kmsg.DescribeGroupsRequest) *kmsg.DescribeGroupsResponse {
	resp := kmsg.NewPtrDescribeGroupsResponse()
	resp.Version = req.Version
	code := c.statusCode()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, name := range req.Groups {
		sg := kmsg.NewDescribeGroupsResponseGroup()
		sg.Group = name
		if code := cmp.Or(code, c.ownershipCode(name)); code != 0 {
			sg.ErrorCode = code
			resp.Groups = append(resp.Groups, sg)
			continue
		}
		g := c.groups[name]
		switch {
		case g != nil && g.consumer != nil:
			sg.State = stateDead.String()
			if req.Version >= 6 {
				sg.ErrorCode = kerr.GroupIDNotFound.Code
				sg.ErrorMessage = kmsg.StringPtr("Group " + name + " is not a classic group.")
			}
		case g != nil:
			g.describe(&sg)
		case c.offsets.hasGroup(name):
			// Only committed offsets: a group of assign() users, or one
			// whose members left before a restart.
			sg.State = stateEmpty.String()
		default:
			sg.State = stateDead.String()
			if req.Version >= 6 {
				sg.ErrorCode = kerr.GroupIDNotFound.Code
				sg.ErrorMessage = kmsg.StringPtr("Group " + name + " not found.")
			}
		}
		resp.Groups = append(resp.Groups, sg)
	}
	return resp
}

func (g *group) describe(sg *kmsg.DescribeGroupsResponseGroup) {
	sg.State = g.state.String()
	sg.ProtocolType = g.protocolType
	stable := g.state == stateStable
	if stable {
		sg.Protocol = g.protocol
	}
	for _, id := range g.sortedMemberIDs() {
		m := g.members[id]
		dm := kmsg.NewDescribeGroupsResponseGroupMember()
		dm.MemberID = m.id
		dm.InstanceID = m.instanceID
		dm.ClientID = m.clientID
		dm.ClientHost = m.clientHost
		if stable {
			dm.ProtocolMetadata = m.metadata(g.protocol)
			dm.MemberAssignment = m.assignment
		}
		sg.Members = append(sg.Members, dm)
	}
}
