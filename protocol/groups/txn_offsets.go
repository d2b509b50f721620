package groups

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ValidateTxnOffsetCommit decides whether a transactional producer may
// commit offsets for the group (TxnOffsetCommit): 0, or the error code. v3+
// carries the committing consumer's generation and member id (KIP-447),
// checked as an OffsetCommit's are; a request without them (v0-v2, or a
// producer given only the group's name) is not checked, as in Kafka.
func (c *Coordinator) ValidateTxnOffsetCommit(req *kmsg.TxnOffsetCommitRequest) int16 {
	if code := c.groupCode(req.Group); code != 0 {
		return code
	}
	if !ValidGroupID(req.Group) {
		return kerr.InvalidGroupID.Code
	}
	if req.Version < 3 || (req.Generation < 0 && req.MemberID == "" && req.InstanceID == nil) {
		return 0
	}
	as := &kmsg.OffsetCommitRequest{Version: 7, Group: req.Group, Generation: req.Generation, MemberID: req.MemberID, InstanceID: req.InstanceID}
	c.mu.Lock()
	defer c.mu.Unlock()
	code, _ := c.validateCommit(as, time.Now(), topicView{}, true)
	return code
}

// CheckOffset is the check of one partition's commit (0: it may be
// stored): the gateway serves the partition and the metadata fits.
func (c *Coordinator) CheckOffset(topic string, partition int32, metadata string) int16 {
	switch {
	case c.opts.TopicExists != nil && !c.opts.TopicExists(topic, partition):
		return kerr.UnknownTopicOrPartition.Code
	case len(metadata) > c.opts.MaxMetadataBytes:
		return kerr.OffsetMetadataTooLarge.Code
	}
	return 0
}

// CommitOffsets commits offsets a transaction staged, once it commits:
// durably, as OffsetCommit does, each group's at once.
func (c *Coordinator) CommitOffsets(ctx context.Context, offs []CommittedOffset) error {
	byGroup := map[string][]CommittedOffset{}
	var order []string
	commitMs := c.opts.Now().UnixMilli()
	for _, o := range offs {
		if _, ok := byGroup[o.Group]; !ok {
			order = append(order, o.Group)
		}
		o.CommitTimeMs = commitMs
		byGroup[o.Group] = append(byGroup[o.Group], o)
	}
	for _, g := range order {
		if err := c.offsets.commit(ctx, c.store, g, byGroup[g]); err != nil {
			return err
		}
		c.log.Debug().Str("group", g).Int("partitions", len(byGroup[g])).Msg("transaction's offsets committed")
	}
	return nil
}
