package groups

import (
	"context"
	"errors"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// OffsetCommit handles an OffsetCommit request (v2-v10). The offsets are
// durable in the OffsetStore before the response says so.
//
// Version notes: v2-v4 carry a retention time, which is accepted and not
// applied (offsets expire by the coordinator's OffsetsRetention, as in
// Kafka 2.1+); v5 drops it; v6 adds the leader
// epoch per partition; v7 adds group.instance.id; v8 is flexible; v9 lets
// a consumer-protocol member (KIP-848) commit with its member epoch in the
// generation field, a stale one answering STALE_MEMBER_EPOCH; v10 names
// topics by id, an unknown id answering UNKNOWN_TOPIC_ID.
//
// Who may commit, as in Kafka: a member of the current generation; or,
// for a group without members, anyone with generation -1 and no member id
// (a "simple" commit from a consumer that uses assign(), such as Flink's
// KafkaSource). A generation-based commit to a group this coordinator
// does not know is ILLEGAL_GENERATION, which makes the client rejoin.
func (c *Coordinator) OffsetCommit(ctx context.Context, req *kmsg.OffsetCommitRequest) *kmsg.OffsetCommitResponse {
	resp := kmsg.NewPtrOffsetCommitResponse()
	resp.Version = req.Version
	// Topic ids (v10, and the partitions a consumer-group member holds)
	// are resolved against one look at the topics.
	view := c.topicView()
	if req.Version >= 10 {
		// Topics by id: resolved to the names offsets are kept under.
		for i := range req.Topics {
			req.Topics[i].Topic = view.byID[req.Topics[i].TopicID].Name
		}
	}
	for _, t := range req.Topics {
		rt := kmsg.NewOffsetCommitResponseTopic()
		rt.Topic = t.Topic
		rt.TopicID = t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewOffsetCommitResponseTopicPartition()
			rp.Partition = p.Partition
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	setAll := func(code int16) *kmsg.OffsetCommitResponse {
		for i := range resp.Topics {
			for j := range resp.Topics[i].Partitions {
				resp.Topics[i].Partitions[j].ErrorCode = code
			}
		}
		return resp
	}

	if code := c.groupCode(req.Group); code != 0 {
		return setAll(code)
	}
	if !ValidGroupID(req.Group) {
		return setAll(kerr.InvalidGroupID.Code)
	}
	now := time.Now()
	c.mu.Lock()
	code, refused := c.validateCommit(req, now, view, false)
	c.mu.Unlock()
	if code != 0 {
		// The client's news, not the gateway's: debug.
		c.log.Debug().Str("group", req.Group).Str("member", req.MemberID).Int32("generation", req.Generation).
			Int16("version", req.Version).Str("error", kerr.ErrorForCode(code).Error()).Msg("offset commit refused")
		return setAll(code)
	}

	// The retention clock, not now: offset expiry compares with it.
	commitMs := c.opts.Now().UnixMilli()
	var offs []CommittedOffset
	type slot struct{ t, p int } // where each stored offset answers
	var slots []slot
	for i, t := range req.Topics {
		for j, p := range t.Partitions {
			rp := &resp.Topics[i].Partitions[j]
			md := ""
			if p.Metadata != nil {
				md = *p.Metadata
			}
			if t.Topic == "" && req.Version >= 10 {
				rp.ErrorCode = kerr.UnknownTopicID.Code
				continue
			}
			if rc := refused[partitionKey{t.Topic, p.Partition}]; rc != 0 {
				rp.ErrorCode = rc
				continue
			}
			if rp.ErrorCode = c.CheckOffset(t.Topic, p.Partition, md); rp.ErrorCode == 0 {
				epoch := p.LeaderEpoch
				if req.Version < 6 {
					epoch = -1
				}
				offs = append(offs, CommittedOffset{
					Group:        req.Group,
					Topic:        t.Topic,
					Partition:    p.Partition,
					Offset:       p.Offset,
					LeaderEpoch:  epoch,
					Metadata:     md,
					CommitTimeMs: commitMs,
				})
				slots = append(slots, slot{i, j})
			}
		}
	}
	if len(offs) == 0 {
		return resp
	}
	if err := c.offsets.commit(ctx, c.store, req.Group, offs); err != nil {
		// Retriable for the client: it commits again, as it would when a
		// Kafka coordinator fails to append to __consumer_offsets, or
		// once expiry made room for another group. Only a store failure
		// is the gateway's news: refusals are a client's, and may come by
		// the thousand.
		ev := c.log.Warn()
		code := kerr.CoordinatorNotAvailable.Code
		switch {
		case errors.Is(err, errTooManyGroups):
			ev = c.log.Debug()
		case errors.Is(err, ErrShardNotOwned):
			// Another gateway took the group over: the client finds it.
			ev, code = c.log.Info(), kerr.NotCoordinator.Code
		case errors.Is(err, errTooManyOffsets):
			// Kafka's answer to a commit its log cannot take: the
			// client must commit less, retrying cannot help.
			ev, code = c.log.Debug(), kerr.InvalidCommitOffsetSize.Code
		}
		ev.Err(err).Str("group", req.Group).Int("partitions", len(offs)).Msg("offset commit failed")
		for _, s := range slots {
			resp.Topics[s.t].Partitions[s.p].ErrorCode = code
		}
		return resp
	}
	c.log.Debug().Str("group", req.Group).Str("member", req.MemberID).Int32("generation", req.Generation).
		Int("partitions", len(offs)).Msg("offsets committed")
	return resp
}

// partitionKey names a committed partition.
type partitionKey struct {
	topic     string
	partition int32
}

// validateCommit decides whether the committer may commit to the group;
// called with c.mu held. A successful commit of a member also counts as
// its heartbeat, as in Kafka. A member of a consumer group may be refused
// some partitions only (refused, by partition); a transactional commit
// (TxnOffsetCommit) must come from the member's current epoch.
func (c *Coordinator) validateCommit(req *kmsg.OffsetCommitRequest, now time.Time, view topicView, transactional bool) (code int16, refused map[partitionKey]int16) {
	instanceID := req.InstanceID
	if req.Version < 7 {
		instanceID = nil
	}
	simple := req.Generation < 0 && req.MemberID == "" && instanceID == nil

	g := c.group(req.Group, false)
	if g == nil {
		switch {
		case req.Generation >= 0:
			// A member of a generation this coordinator does not know (the
			// gateway restarted, or the group emptied and was forgotten).
			return kerr.IllegalGeneration.Code, nil
		case simple:
			return 0, nil
		default:
			return kerr.UnknownMemberID.Code, nil
		}
	}
	if g.consumer != nil {
		return g.consumer.validateCommit(req, simple, view, transactional)
	}
	if simple {
		if len(g.members) > 0 {
			// Only members commit to a group that has members.
			return kerr.UnknownMemberID.Code, nil
		}
		return 0, nil
	}
	m, code := g.validateMember(req.MemberID, instanceID)
	if code != 0 {
		return code, nil
	}
	if req.Generation != g.generation {
		return kerr.IllegalGeneration.Code, nil
	}
	if g.state == stateCompletingRebalance {
		// Between join and sync nobody knows its partitions yet.
		return kerr.RebalanceInProgress.Code, nil
	}
	m.heartbeat(now)
	return 0, nil
}

// validateCommit decides whether a commit to a consumer group may land,
// as Kafka's ConsumerGroup.validateOffsetCommit: from one of its members,
// or a simple commit to a group without members. A member commits at its
// current epoch or an older one (KIP-1251, Kafka 4.3: a client commits
// what it consumed while its epoch moves on under it, and refusing that
// would make it consume the records again), and only partitions it has
// held since that epoch: one that moved to another member since is
// refused (STALE_MEMBER_EPOCH), so a late commit cannot overwrite the new
// owner's offset. A transactional commit must be at the current epoch
// (KIP-447 fencing).
func (cg *consumerGroup) validateCommit(req *kmsg.OffsetCommitRequest, simple bool, view topicView, transactional bool) (int16, map[partitionKey]int16) {
	if simple {
		if len(cg.members) > 0 {
			return kerr.UnknownMemberID.Code, nil
		}
		return 0, nil
	}
	stale := kerr.StaleMemberEpoch.Code
	if req.Version < 9 {
		stale = kerr.IllegalGeneration.Code
	}
	m := cg.members[req.MemberID]
	switch {
	case m == nil:
		return kerr.UnknownMemberID.Code, nil
	case transactional && req.Generation != m.epoch:
		return kerr.IllegalGeneration.Code, nil
	case transactional:
		return 0, nil
	case req.Generation > m.epoch:
		return stale, nil
	}
	var refused map[partitionKey]int16
	for _, t := range req.Topics {
		info, ok := view.byName[t.Topic]
		if !ok {
			continue // not served: CheckOffset refuses it
		}
		for _, p := range t.Partitions {
			if e, held := m.since[ownedPartition{info.ID, p.Partition}]; !held || e > req.Generation {
				if refused == nil {
					refused = map[partitionKey]int16{}
				}
				refused[partitionKey{t.Topic, p.Partition}] = stale
			}
		}
	}
	return 0, refused
}
