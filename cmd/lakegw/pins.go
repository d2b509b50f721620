package main

import (
	"context"
	"flag"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/lakegw/lakegw/offsets"
	"github.com/lakegw/lakegw/protocol"
	"github.com/lakegw/lakegw/protocol/groups"
	"github.com/lakegw/lakegw/topics"
)

// Consumers pin history (issue #11): a committed group offset still needs
// the snapshot holding the record before it and every later one, so maintenance must not
// expire them (up to the topic's lakegw.consumer.max-pin). Groups left
// empty lose their offsets after --offsets-retention, so dead groups pin
// nothing.

// addOffsetsRetentionFlag defines serve's --offsets-retention, Kafka's
// offsets.retention.minutes; pass its value as
// groups.Options.OffsetsRetention.
func addOffsetsRetentionFlag(fs *flag.FlagSet) *time.Duration {
	return fs.Duration("offsets-retention", groups.DefaultOffsetsRetention,
		"committed offsets of a group without members expire this long after its last commit or member (0: 7 days, negative: never)")
}

// pinIndex is what pinning reads of a topic's offset index
// (*offsets.Index).
type pinIndex interface {
	Partitions() int32
	LogStart(p int32) int64
	HighWatermark(p int32) int64
	Locate(p int32, offset int64) (offsets.Segment, bool)
}

// committedOffsets is where pinning reads the groups' committed offsets:
// the group coordinator (coordinatorOffsets), or, when gateways share a
// state store and each coordinates some groups, the store.
type committedOffsets interface {
	CommittedOffsets(ctx context.Context, topic string) ([]groups.CommittedOffset, error)
}

// coordinatorOffsets reads a lone gateway's coordinator, which holds every
// group.
type coordinatorOffsets struct{ c *groups.Coordinator }

func (o coordinatorOffsets) CommittedOffsets(_ context.Context, topic string) ([]groups.CommittedOffset, error) {
	return o.c.CommittedOffsets(topic), nil
}

// pin is one committed offset that holds table history: the snapshot
// holding the last record the group consumed (the one before its offset),
// and every later one, are still needed. The last consumed record is what
// a Kafka client validates its position with (OffsetForLeaderEpoch with
// that record's epoch): were its snapshot compacted into the log start,
// the group would be told its records were lost and read the compacted
// prefix again.
type pin struct {
	Group       string
	Partition   int32
	Offset      int64
	SnapshotID  int64
	TimestampMs int64 // commit time of SnapshotID
}

func (p pin) String() string {
	return fmt.Sprintf("group %s partition %d at offset %d (snapshot %d, committed %s)",
		p.Group, p.Partition, p.Offset, p.SnapshotID, time.UnixMilli(p.TimestampMs).UTC().Format(time.RFC3339))
}

// topicPins maps the committed offsets of one topic through its index to
// the snapshots they need, oldest snapshot first: the snapshot of the
// record before the offset, or of the offset itself at the log start. A
// group at the high watermark needs the newest snapshot still, and every
// one committed after it. Offsets that need nothing are left out: one past
// the high watermark names no record, and one before the log start already
// lost its history (the consumer is reset to the compacted prefix; keeping
// more history cannot give it back). Offsets of partitions the topic no
// longer has mean nothing and are left out too.
func topicPins(idx pinIndex, committed []groups.CommittedOffset) []pin {
	var out []pin
	n := idx.Partitions()
	for _, o := range committed {
		if o.Partition < 0 || o.Partition >= n {
			continue
		}
		start, hw := idx.LogStart(o.Partition), idx.HighWatermark(o.Partition)
		if o.Offset > hw || o.Offset < start || hw == start {
			continue
		}
		seg, ok := idx.Locate(o.Partition, max(o.Offset-1, start))
		if !ok {
			continue
		}
		out = append(out, pin{Group: o.Group, Partition: o.Partition, Offset: o.Offset, SnapshotID: seg.SnapshotID, TimestampMs: seg.TimestampMs})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].TimestampMs < out[j].TimestampMs })
	return out
}

// pinFinder finds the pins of a topic by name.
type pinFinder struct {
	index     func(topic string) (pinIndex, bool)
	committed committedOffsets
}

func newPinFinder(reg *topics.Registry, committed committedOffsets) pinFinder {
	return pinFinder{
		index: func(name string) (pinIndex, bool) {
			t, ok := reg.Topic(name)
			if !ok {
				return nil, false
			}
			return t.Index, true
		},
		committed: committed,
	}
}

func (f pinFinder) pins(ctx context.Context, topic string) ([]pin, error) {
	idx, ok := f.index(topic)
	if !ok {
		return nil, nil
	}
	offs, err := f.committed.CommittedOffsets(ctx, topic)
	if err != nil {
		return nil, fmt.Errorf("committed offsets of %s: %w", topic, err)
	}
	return topicPins(idx, offs), nil
}

// oldestNeeded is the commit time of the oldest snapshot any group still
// needs on topic; ok is false when no group needs any. When the offsets
// cannot be read, everything is needed (up to the topic's max pin):
// maintenance must not expire what an unread group may still consume.
func (f pinFinder) oldestNeeded(ctx context.Context, topic string) (oldestNeededMs int64, ok bool) {
	ps, err := f.pins(ctx, topic)
	if err != nil {
		return 0, true
	}
	if len(ps) == 0 {
		return 0, false
	}
	return ps[0].TimestampMs, true
}

// maxPinsShown bounds lakegw.pinned-by: one line per group, oldest first.
const maxPinsShown = 5

// PinnedBy implements protocol.PinReporter: each group's oldest pin,
// oldest first, "; "-separated.
func (f pinFinder) PinnedBy(ctx context.Context, topic string) string {
	ps, err := f.pins(ctx, topic)
	if err != nil {
		return "every snapshot (" + err.Error() + ")"
	}
	var lines []string
	seen := map[string]bool{}
	more := 0
	for _, p := range ps {
		if seen[p.Group] {
			continue
		}
		seen[p.Group] = true
		if len(lines) == maxPinsShown {
			more++
			continue
		}
		lines = append(lines, p.String())
	}
	if more > 0 {
		lines = append(lines, fmt.Sprintf("and %d more groups", more))
	}
	return strings.Join(lines, "; ")
}

var _ protocol.PinReporter = pinFinder{}

// consumerPins returns, for a topic, the commit time of the oldest
// snapshot a committed group offset still needs (that snapshot and later
// ones must be kept); ok is false when no group needs any. Maintenance
// uses it to hold back snapshot and changelog expiry, bounded by the
// topic's MaxPinMs.
func consumerPins(reg *topics.Registry, committed committedOffsets) func(ctx context.Context, topic string) (oldestNeededMs int64, ok bool) {
	return newPinFinder(reg, committed).oldestNeeded
}

// consumerPinReport describes what pins each topic, for DescribeConfigs'
// lakegw.pinned-by (protocol.Config.Pins) and status output.
func consumerPinReport(reg *topics.Registry, committed committedOffsets) protocol.PinReporter {
	return newPinFinder(reg, committed)
}
