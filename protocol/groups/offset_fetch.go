package groups

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetFetch handles an OffsetFetch request (v1-v10). A partition without
// a committed offset answers offset -1 and no error, as in Kafka.
//
// Version notes: v2 adds a request-level error code and null topics
// meaning "every committed partition of the group"; v5 adds the leader
// epoch; v7 adds RequireStable: a partition an open transaction staged an
// offset for answers UNSTABLE_OFFSET_COMMIT (Options.UnstableOffset), and
// the client retries; v8 fetches several groups in one request; v9 adds
// the member id and epoch of a consumer-protocol member, which must be
// current (UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH); v10 names topics by id
// (KIP-848), an unknown id answering UNKNOWN_TOPIC_ID.
func (c *Coordinator) OffsetFetch(_ context.Context, req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	resp := kmsg.NewPtrOffsetFetchResponse()
	resp.Version = req.Version

	if req.Version >= 8 {
		var view topicView
		if req.Version >= 10 {
			view = c.topicView()
		}
		for _, rg := range req.Groups {
			var want []wantTopic
			if rg.Topics != nil {
				want = make([]wantTopic, 0, len(rg.Topics))
				for _, t := range rg.Topics {
					name := t.Topic
					if req.Version >= 10 {
						name = view.byID[t.TopicID].Name // "" when unknown: no offsets
					}
					want = append(want, wantTopic{name, t.Partitions})
				}
			}
			code, topics := c.fetchGroup(rg.Group, want, rg.Topics == nil)
			if code == 0 && req.Version >= 9 {
				code = c.validateFetchMember(rg.Group, rg.MemberID, rg.MemberEpoch)
				if code != 0 {
					topics = nil
				}
			}
			if code == 0 && rg.Topics == nil && req.RequireStable && c.unstableGroup(rg.Group) {
				code, topics = kerr.UnstableOffsetCommit.Code, nil
			}
			sg := kmsg.NewOffsetFetchResponseGroup()
			sg.Group = rg.Group
			sg.ErrorCode = code
			for i, t := range topics {
				st := kmsg.NewOffsetFetchResponseGroupTopic()
				st.Topic = t.topic
				if req.Version >= 10 {
					if rg.Topics != nil {
						st.TopicID = rg.Topics[i].TopicID
					} else if info, ok := view.byName[t.topic]; ok {
						st.TopicID = info.ID
					} else {
						continue // a deleted topic has no id to name it by
					}
				}
				for _, p := range t.parts {
					sp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
					sp.Partition = p.Partition
					sp.Offset = p.Offset
					sp.LeaderEpoch = p.LeaderEpoch
					sp.Metadata = kmsg.StringPtr(p.Metadata)
					switch {
					case t.topic == "":
						sp.ErrorCode = kerr.UnknownTopicID.Code
					case req.RequireStable && c.unstable(rg.Group, t.topic, p.Partition):
						sp.Offset, sp.ErrorCode = -1, kerr.UnstableOffsetCommit.Code
					}
					st.Partitions = append(st.Partitions, sp)
				}
				sg.Topics = append(sg.Topics, st)
			}
			resp.Groups = append(resp.Groups, sg)
		}
		return resp
	}

	var want []wantTopic
	if req.Topics != nil {
		want = make([]wantTopic, 0, len(req.Topics))
		for _, t := range req.Topics {
			want = append(want, wantTopic{t.Topic, t.Partitions})
		}
	}
	all := req.Topics == nil && req.Version >= 2
	code, topics := c.fetchGroup(req.Group, want, all)
	if code == 0 && all && req.Version >= 7 && req.RequireStable && c.unstableGroup(req.Group) {
		code, topics = kerr.UnstableOffsetCommit.Code, nil
	}
	resp.ErrorCode = code
	for _, t := range topics {
		st := kmsg.NewOffsetFetchResponseTopic()
		st.Topic = t.topic
		for _, p := range t.parts {
			sp := kmsg.NewOffsetFetchResponseTopicPartition()
			sp.Partition = p.Partition
			sp.Offset = p.Offset
			sp.LeaderEpoch = p.LeaderEpoch
			sp.Metadata = kmsg.StringPtr(p.Metadata)
			if req.Version >= 7 && req.RequireStable && c.unstable(req.Group, t.topic, p.Partition) {
				sp.Offset, sp.ErrorCode = -1, kerr.UnstableOffsetCommit.Code
			}
			if req.Version < 2 {
				// v0-v1 have no request-level error: it goes on every
				// partition.
				sp.ErrorCode = code
			}
			st.Partitions = append(st.Partitions, sp)
		}
		resp.Topics = append(resp.Topics, st)
	}
	return resp
}

type wantTopic struct {
	topic string
	parts []int32
}

type fetchedTopic struct {
	topic string
	parts []CommittedOffset
}

// fetchGroup looks up the offsets of one group: every committed partition
// when all is set, else the partitions in want. On a request-level error
// the wanted partitions come back with offset -1, for v0-v1 to carry it.
func (c *Coordinator) fetchGroup(group string, want []wantTopic, all bool) (int16, []fetchedTopic) {
	code := c.groupCode(group)
	if all {
		if code != 0 {
			return code, nil
		}
		var out []fetchedTopic
		for _, o := range c.offsets.all(group) {
			if n := len(out); n == 0 || out[n-1].topic != o.Topic {
				out = append(out, fetchedTopic{topic: o.Topic})
			}
			out[len(out)-1].parts = append(out[len(out)-1].parts, o)
		}
		return 0, out
	}
	out := make([]fetchedTopic, 0, len(want))
	for _, w := range want {
		ft := fetchedTopic{topic: w.topic, parts: make([]CommittedOffset, 0, len(w.parts))}
		for _, p := range w.parts {
			o, ok := CommittedOffset{}, false
			if code == 0 {
				o, ok = c.offsets.get(group, w.topic, p)
			}
			if !ok {
				o = CommittedOffset{Group: group, Topic: w.topic, Partition: p, Offset: -1, LeaderEpoch: -1}
			}
			ft.parts = append(ft.parts, o)
		}
		out = append(out, ft)
	}
	return code, out
}

// validateFetchMember checks the member id and epoch an OffsetFetch v9+
// names against a consumer group, as Kafka's validateOffsetFetch: a member
// epoch of -1 (not a member, or a classic group) is not checked.
func (c *Coordinator) validateFetchMember(group string, memberID *string, epoch int32) int16 {
	if epoch < 0 || memberID == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	g := c.groups[group]
	if g == nil || g.consumer == nil {
		return 0
	}
	m := g.consumer.members[*memberID]
	switch {
	case m == nil:
		return kerr.UnknownMemberID.Code
	case m.epoch != epoch:
		return kerr.StaleMemberEpoch.Code
	}
	return 0
}

// unstableGroup says whether an open transaction staged an offset for a
// partition of the group (Options.UnstableGroup).
func (c *Coordinator) unstableGroup(group string) bool {
	return c.opts.UnstableGroup != nil && c.opts.UnstableGroup(group)
}

// unstable says whether an open transaction staged an offset for the
// group's partition (Options.UnstableOffset).
func (c *Coordinator) unstable(group, topic string, partition int32) bool {
	return c.opts.UnstableOffset != nil && c.opts.UnstableOffset(group, topic, partition)
}
