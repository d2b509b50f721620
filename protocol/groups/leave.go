package groups

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// LeaveGroup handles a LeaveGroup request (v0-v5). Members that leave are
// removed at once and the group rebalances, instead of waiting for their
// sessions to expire.
//
// Version notes: v3 turns the single member id into a batch of members,
// each with an optional group.instance.id (admin removal of static
// members) and its own error code; v5 adds a reason per member.
func (c *Coordinator) LeaveGroup(_ context.Context, req *kmsg.LeaveGroupRequest) *kmsg.LeaveGroupResponse {
	resp := kmsg.NewPtrLeaveGroupResponse()
	resp.Version = req.Version

	leaving := req.Members
	if req.Version < 3 {
		leaving = []kmsg.LeaveGroupRequestMember{{MemberID: req.MemberID}}
	}
	for _, lm := range leaving {
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID = lm.MemberID
		rm.InstanceID = lm.InstanceID
		resp.Members = append(resp.Members, rm)
	}

	c.mu.Lock()
	resp.ErrorCode = c.leave(req.Group, leaving, resp.Members)
	c.mu.Unlock()

	if req.Version < 3 {
		if resp.ErrorCode == 0 {
			resp.ErrorCode = resp.Members[0].ErrorCode
		}
		resp.Members = nil
	}
	return resp
}

// leave removes the members and fills their result codes in out (same
// order); it returns the request-level error code.
func (c *Coordinator) leave(groupName string, leaving []kmsg.LeaveGroupRequestMember, out []kmsg.LeaveGroupResponseMember) int16 {
	if code := c.groupCode(groupName); code != 0 {
		return code
	}
	if groupName == "" {
		return kerr.InvalidGroupID.Code
	}
	g := c.group(groupName, false)
	if g == nil {
		for i := range out {
			out[i].ErrorCode = kerr.UnknownMemberID.Code
		}
		return 0
	}
	removed := 0
	for i, lm := range leaving {
		id := lm.MemberID
		if lm.InstanceID != nil {
			cur, ok := g.static[*lm.InstanceID]
			switch {
			case !ok:
				out[i].ErrorCode = kerr.UnknownMemberID.Code
				continue
			case id != "" && id != cur:
				out[i].ErrorCode = kerr.FencedInstanceID.Code
				continue
			}
			id = cur
		}
		if g.takePending(id) {
			continue
		}
		m := g.members[id]
		if m == nil {
			out[i].ErrorCode = kerr.UnknownMemberID.Code
			continue
		}
		reason := ""
		if lm.Reason != nil {
			reason = *lm.Reason
		}
		c.log.Info().Str("group", g.name).Str("member", id).Str("reason", reason).Msg("member left")
		g.removeMember(m, kerr.UnknownMemberID.Code)
		removed++
	}
	if removed > 0 {
		g.memberChanged("member left")
	} else {
		g.tryCompleteJoin() // a pending member id may have been all we waited for
	}
	c.forget(g)
	return 0
}
