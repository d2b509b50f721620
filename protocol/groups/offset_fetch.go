package groups

import (
	"context"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetFetch handles an OffsetFetch request (v1-v8). A partition without
// a committed offset answers offset -1 and no error, as in Kafka.
//
// Version notes: v2 adds a request-level error code and null topics
// meaning "every committed partition of the group"; v5 adds the leader
// epoch; v7 adds RequireStable: a partition an open transaction staged an
// offset for answers UNSTABLE_OFFSET_COMMIT (Options.UnstableOffset), and
// the client retries; v8 fetches several groups in one request.
func (c *Coordinator) OffsetFetch(_ context.Context, req *kmsg.OffsetFetchRequest) *kmsg.OffsetFetchResponse {
	resp := kmsg.NewPtrOffsetFetchResponse()
	resp.Version = req.Version

	if req.Version >= 8 {
		for _, rg := range req.Groups {
			var want []wantTopic
			if rg.Topics != nil {
				want = make([]wantTopic, 0, len(rg.Topics))
				for _, t := range rg.Topics {
					want = append(want, wantTopic{t.Topic, t.Partitions})
				}
			}
			code, topics := c.fetchGroup(rg.Group, want, rg.Topics == nil)
			if code == 0 && rg.Topics == nil && req.RequireStable && c.unstableGroup(rg.Group) {
				code, topics = kerr.UnstableOffsetCommit.Code, nil
			}
			sg := kmsg.NewOffsetFetchResponseGroup()
			sg.Group = rg.Group
			sg.ErrorCode = code
			for _, t := range topics {
				st := kmsg.NewOffsetFetchResponseGroupTopic()
				st.Topic = t.topic
				for _, p := range t.parts {
					sp := kmsg.NewOffsetFetchResponseGroupTopicPartition()
					sp.Partition = p.Partition
					sp.Offset = p.Offset
					sp.LeaderEpoch = p.LeaderEpoch
					sp.Metadata = kmsg.StringPtr(p.Metadata)
					if req.RequireStable && c.unstable(rg.Group, t.topic, p.Partition) {
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
	code := c.statusCode()
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
