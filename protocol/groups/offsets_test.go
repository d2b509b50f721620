package groups

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func fetchV(c *Coordinator, version int16, group string, topics map[string][]int32) *kmsg.OffsetFetchResponse {
	r := kmsg.NewPtrOffsetFetchRequest()
	r.Version = version
	if version >= 8 {
		rg := kmsg.NewOffsetFetchRequestGroup()
		rg.Group = group
		for t, ps := range topics {
			rg.Topics = append(rg.Topics, kmsg.OffsetFetchRequestGroupTopic{Topic: t, Partitions: ps})
		}
		r.Groups = append(r.Groups, rg)
	} else {
		r.Group = group
		for t, ps := range topics {
			r.Topics = append(r.Topics, kmsg.OffsetFetchRequestTopic{Topic: t, Partitions: ps})
		}
	}
	return c.OffsetFetch(context.Background(), r)
}

// fetched flattens a v<8 fetch response to partition -> offset.
func fetched(t *testing.T, resp *kmsg.OffsetFetchResponse) map[int32]kmsg.OffsetFetchResponseTopicPartition {
	t.Helper()
	wantCode(t, "fetch", resp.ErrorCode, 0)
	out := make(map[int32]kmsg.OffsetFetchResponseTopicPartition)
	for _, tp := range resp.Topics {
		for _, p := range tp.Partitions {
			wantCode(t, "fetch partition", p.ErrorCode, 0)
			out[p.Partition] = p
		}
	}
	return out
}

func TestOffsetCommitFetchAcrossRestart(t *testing.T) {
	store := newMemStore()
	c := newOpened(t, store, testOpts())
	id, gen := stableSolo(t, c, "g")

	allCodes(t, "member commit", c.OffsetCommit(context.Background(), commitReq("g", id, gen, "t", map[int32]int64{0: 10, 1: 20})), 0)
	allCodes(t, "recommit", c.OffsetCommit(context.Background(), commitReq("g", id, gen, "t", map[int32]int64{1: 21})), 0)
	if _, saves := store.count(); saves != 2 {
		t.Fatalf("store saw %d saves, want 2 (one per commit, before the ack)", saves)
	}
	got := fetched(t, fetchV(c, 7, "g", map[string][]int32{"t": {0, 1, 2}}))
	if got[0].Offset != 10 || got[1].Offset != 21 || got[2].Offset != -1 || got[2].LeaderEpoch != -1 {
		t.Fatalf("fetch before restart: %+v", got)
	}
	if got[0].LeaderEpoch != 3 || got[0].Metadata == nil || *got[0].Metadata != "md" {
		t.Fatalf("epoch/metadata not kept: %+v", got[0])
	}
	c.Close()

	// "Restart": a new coordinator on the same store.
	c2 := newOpened(t, store, testOpts())
	got = fetched(t, fetchV(c2, 5, "g", map[string][]int32{"t": {0, 1}}))
	if got[0].Offset != 10 || got[1].Offset != 21 || got[1].LeaderEpoch != 3 {
		t.Fatalf("fetch after restart: %+v", got)
	}
	// Null topics (v2+) means every committed partition.
	all := fetched(t, fetchV(c2, 2, "g", nil))
	if len(all) != 2 {
		t.Fatalf("fetch all: %+v", all)
	}
	// v8: several groups in one request, null topics per group.
	r := kmsg.NewPtrOffsetFetchRequest()
	r.Version = 8
	r.Groups = []kmsg.OffsetFetchRequestGroup{{Group: "g"}, {Group: "none", Topics: []kmsg.OffsetFetchRequestGroupTopic{{Topic: "t", Partitions: []int32{0}}}}}
	v8 := c2.OffsetFetch(context.Background(), r)
	if len(v8.Groups) != 2 || len(v8.Groups[0].Topics) != 1 || len(v8.Groups[0].Topics[0].Partitions) != 2 ||
		v8.Groups[1].Topics[0].Partitions[0].Offset != -1 {
		t.Fatalf("v8 fetch: %+v", v8.Groups)
	}

	// The old member's generation is unknown after the restart: it must
	// rejoin (ILLEGAL_GENERATION), and its commit is not stored.
	allCodes(t, "stale member commit", c2.OffsetCommit(context.Background(), commitReq("g", id, gen, "t", map[int32]int64{0: 99})), kerr.IllegalGeneration.Code)
	if got := fetched(t, fetchV(c2, 7, "g", map[string][]int32{"t": {0}})); got[0].Offset != 10 {
		t.Fatalf("refused commit changed the offset: %+v", got)
	}
	// DescribeGroups/ListGroups see the group through its offsets.
	lg := kmsg.NewPtrListGroupsRequest()
	if l := c2.ListGroups(context.Background(), lg); len(l.Groups) != 1 || l.Groups[0].Group != "g" {
		t.Fatalf("list after restart: %+v", l.Groups)
	}
}

func TestSimpleCommitsFromAssignUsers(t *testing.T) {
	c := newOpened(t, newMemStore(), testOpts())
	// Flink's KafkaSource: assign(), generation -1, no member id.
	for _, v := range []int16{2, 4, 5, 8} {
		r := commitReq("flink", "", -1, "db.table", map[int32]int64{0: int64(100 + v)})
		r.Version = v
		r.RetentionTimeMillis = 60000
		allCodes(t, "simple commit", c.OffsetCommit(context.Background(), r), 0)
	}
	got := fetched(t, fetchV(c, 1, "flink", map[string][]int32{"db.table": {0}}))
	if got[0].Offset != 108 {
		t.Fatalf("offset %d, want 108", got[0].Offset)
	}
	// Generation-based commit to a group without members is refused.
	allCodes(t, "generation commit", c.OffsetCommit(context.Background(), commitReq("flink", "", 3, "db.table", map[int32]int64{0: 1})), kerr.IllegalGeneration.Code)
	allCodes(t, "member id on empty group", c.OffsetCommit(context.Background(), commitReq("flink", "m", -1, "db.table", map[int32]int64{0: 1})), kerr.UnknownMemberID.Code)

	// Once the group has members, only they may commit.
	id, gen := stableSolo(t, c, "flink")
	allCodes(t, "simple commit to active group", c.OffsetCommit(context.Background(), commitReq("flink", "", -1, "db.table", map[int32]int64{0: 1})), kerr.UnknownMemberID.Code)
	allCodes(t, "wrong generation", c.OffsetCommit(context.Background(), commitReq("flink", id, gen+1, "db.table", map[int32]int64{0: 1})), kerr.IllegalGeneration.Code)
	allCodes(t, "member commit", c.OffsetCommit(context.Background(), commitReq("flink", id, gen, "db.table", map[int32]int64{0: 200})), 0)
	// Empty group id is invalid for commits.
	allCodes(t, "empty group", c.OffsetCommit(context.Background(), commitReq("", "", -1, "t", map[int32]int64{0: 1})), kerr.InvalidGroupID.Code)
}

func TestOffsetCommitPartitionErrors(t *testing.T) {
	store := newMemStore()
	opts := testOpts()
	opts.TopicExists = func(topic string, partition int32) bool { return topic == "served" && partition < 2 }
	opts.MaxMetadataBytes = 4
	c := newOpened(t, store, opts)

	r := commitReq("g", "", -1, "served", map[int32]int64{0: 1})
	big := kmsg.NewOffsetCommitRequestTopicPartition()
	big.Partition, big.Offset, big.Metadata = 1, 2, kmsg.StringPtr("too long")
	unknown := kmsg.NewOffsetCommitRequestTopicPartition()
	unknown.Partition, unknown.Offset = 5, 3
	r.Topics[0].Partitions = append(r.Topics[0].Partitions, big, unknown)
	r.Topics = append(r.Topics, commitReq("g", "", -1, "unserved", map[int32]int64{0: 1}).Topics...)
	resp := c.OffsetCommit(context.Background(), r)
	want := [][]int16{
		{0, kerr.OffsetMetadataTooLarge.Code, kerr.UnknownTopicOrPartition.Code},
		{kerr.UnknownTopicOrPartition.Code},
	}
	for i, tp := range resp.Topics {
		for j, p := range tp.Partitions {
			wantCode(t, fmt.Sprintf("%s/%d", tp.Topic, p.Partition), p.ErrorCode, want[i][j])
		}
	}
	if n, _ := store.count(); n != 1 {
		t.Fatalf("store holds %d offsets, want only the valid one", n)
	}
}

func TestOffsetCommitStoreFailureIsNotAcknowledged(t *testing.T) {
	store := newMemStore()
	c := newOpened(t, store, testOpts())
	allCodes(t, "commit", c.OffsetCommit(context.Background(), commitReq("g", "", -1, "t", map[int32]int64{0: 5})), 0)
	store.setFail(errStoreDown)
	allCodes(t, "commit with store down", c.OffsetCommit(context.Background(), commitReq("g", "", -1, "t", map[int32]int64{0: 6})), kerr.CoordinatorNotAvailable.Code)
	if got := fetched(t, fetchV(c, 7, "g", map[string][]int32{"t": {0}})); got[0].Offset != 5 {
		t.Fatalf("failed commit is visible: %+v", got)
	}
	// A commit whose connection is already gone is not applied either.
	store.setFail(nil)
	ctx, cancel := context.WithCancel(context.Background())
	g := c.offsets.groups["g"]
	g.sem <- struct{}{} // hold the group's commit slot
	cancel()
	allCodes(t, "commit of a closed connection", c.OffsetCommit(ctx, commitReq("g", "", -1, "t", map[int32]int64{0: 7})), kerr.CoordinatorNotAvailable.Code)
	<-g.sem
}
