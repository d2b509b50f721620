package groups

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// DeleteGroups handles a DeleteGroups request (v0-3; v1 nothing new, v2
// flexible, v3 nothing new for the classic and consumer groups served
// here), as `kafka-consumer-groups --delete` sends it. A group is
// deleted with its committed offsets, durably, only when it has no members
// (NON_EMPTY_GROUP otherwise); one the coordinator does not know is
// GROUP_ID_NOT_FOUND. A deleted group no longer pins table history.
func (c *Coordinator) DeleteGroups(ctx context.Context, req *kmsg.DeleteGroupsRequest) *kmsg.DeleteGroupsResponse {
	resp := kmsg.NewPtrDeleteGroupsResponse()
	resp.Version = req.Version
	for _, name := range req.Groups {
		r := kmsg.NewDeleteGroupsResponseGroup()
		r.Group = name
		r.ErrorCode = c.deleteGroup(ctx, name)
		resp.Groups = append(resp.Groups, r)
	}
	return resp
}

// deleteGroup deletes one group under lockGroup.
func (c *Coordinator) deleteGroup(ctx context.Context, name string) int16 {
	offs, gr, unlock, code := c.lockGroup(ctx, name)
	if code != 0 {
		return code
	}
	defer unlock()
	if gr != nil && !gr.empty() {
		return kerr.NonEmptyGroup.Code
	}
	if offs != nil {
		if c.store != nil {
			if err := c.store.DeleteGroupOffsets(ctx, name); err != nil {
				c.log.Warn().Err(err).Str("group", name).Msg("delete group: its offsets could not be removed; nothing changed")
				return storeFailureCode(err)
			}
		}
		c.offsets.mu.Lock()
		if c.offsets.groups[name] == offs {
			delete(c.offsets.groups, name)
		}
		c.offsets.mu.Unlock()
	}
	if gr != nil {
		c.forget(gr)
	}
	c.log.Info().Str("group", name).Msg("group deleted")
	return 0
}

// lockGroup holds a group for a deletion: its commit semaphore, then c.mu,
// so that no commit lands and no member joins between the checks and the
// removal. code is INVALID_GROUP_ID, GROUP_ID_NOT_FOUND (neither members
// nor offsets) or the coordinator's status, and then nothing is held;
// offs or gr may be nil (a group with members but no offsets, or the
// reverse). unlock releases both.
func (c *Coordinator) lockGroup(ctx context.Context, name string) (offs *groupOffsets, gr *group, unlock func(), code int16) {
	if code := c.groupCode(name); code != 0 {
		return nil, nil, nil, code
	}
	if !ValidGroupID(name) {
		return nil, nil, nil, kerr.InvalidGroupID.Code
	}
	offs, err := c.offsets.acquire(ctx, name, false)
	if err != nil {
		c.log.Debug().Err(err).Str("group", name).Msg("group deletion: its offsets are busy")
		return nil, nil, nil, kerr.CoordinatorNotAvailable.Code
	}
	c.mu.Lock()
	unlock = func() {
		c.mu.Unlock()
		if offs != nil {
			<-offs.sem
		}
	}
	gr = c.groups[name]
	if gr == nil && offs == nil {
		unlock()
		return nil, nil, nil, kerr.GroupIDNotFound.Code
	}
	return offs, gr, unlock, 0
}
