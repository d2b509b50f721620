package groups

import (
	"context"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Group types as ListGroups v5 names them.
const (
	groupTypeClassic  = "classic"
	groupTypeConsumer = "consumer"
)

// ListGroups handles a ListGroups request (v0-v5): every group with
// members or committed offsets.
//
// Version notes: v3 is flexible; v4 filters by state (case-insensitive,
// as Kafka parses it); v5 gives each group's type and filters by it
// (KIP-848; `kafka-consumer-groups --list --type` shows Classic, not
// Unknown).
func (c *Coordinator) ListGroups(_ context.Context, req *kmsg.ListGroupsRequest) *kmsg.ListGroupsResponse {
	resp := kmsg.NewPtrListGroupsResponse()
	resp.Version = req.Version
	if code := c.statusCode(); code != 0 {
		resp.ErrorCode = code
		return resp
	}
	type listed struct{ name, protocolType, state, groupType string }
	var all []listed
	c.mu.Lock()
	for name, g := range c.groups {
		all = append(all, listed{name, g.protocolType, g.stateName(), g.groupTypeName()})
	}
	for _, name := range c.offsets.groupNames() {
		if c.groups[name] == nil {
			all = append(all, listed{name, "", stateEmpty.String(), groupTypeClassic})
		}
	}
	c.mu.Unlock()
	sort.Slice(all, func(i, j int) bool { return all[i].name < all[j].name })

	matches := func(filter []string, v string) bool {
		if len(filter) == 0 {
			return true
		}
		for _, f := range filter {
			if strings.EqualFold(f, v) {
				return true
			}
		}
		return false
	}
	for _, l := range all {
		if !matches(req.StatesFilter, l.state) || !matches(req.TypesFilter, l.groupType) {
			continue
		}
		lg := kmsg.NewListGroupsResponseGroup()
		lg.Group = l.name
		lg.ProtocolType = l.protocolType
		lg.GroupState = l.state
		lg.GroupType = l.groupType
		resp.Groups = append(resp.Groups, lg)
	}
	return resp
}
