package groups

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Heartbeat handles a Heartbeat request (v0-v4): it keeps the member's
// session alive and is how members learn of a rebalance
// (REBALANCE_IN_PROGRESS).
//
// Version notes: v3 adds group.instance.id; v4 is flexible.
func (c *Coordinator) Heartbeat(_ context.Context, req *kmsg.HeartbeatRequest) *kmsg.HeartbeatResponse {
	resp := kmsg.NewPtrHeartbeatResponse()
	resp.Version = req.Version
	c.mu.Lock()
	resp.ErrorCode = c.heartbeat(req, time.Now())
	c.mu.Unlock()
	return resp
}

func (c *Coordinator) heartbeat(req *kmsg.HeartbeatRequest, now time.Time) int16 {
	if code := c.groupCode(req.Group); code != 0 {
		return code
	}
	if req.Group == "" {
		return kerr.InvalidGroupID.Code
	}
	g := c.group(req.Group, false)
	if g == nil {
		return kerr.UnknownMemberID.Code
	}
	instanceID := req.InstanceID
	if req.Version < 3 {
		instanceID = nil
	}
	m, code := g.validateMember(req.MemberID, instanceID)
	if code != 0 {
		return code
	}
	if req.Generation != g.generation {
		return kerr.IllegalGeneration.Code
	}
	switch g.state {
	case statePreparingRebalance:
		m.heartbeat(now)
		return kerr.RebalanceInProgress.Code
	case stateCompletingRebalance, stateStable:
		// In CompletingRebalance a member may heartbeat between its join
		// answer and its sync; that is a normal heartbeat.
		m.heartbeat(now)
		return 0
	default:
		return kerr.UnknownMemberID.Code
	}
}
