package e2e

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// `kafka-consumer-groups --delete` and `--delete-offsets` (DeleteGroups,
// OffsetDelete), as Kafka answers them: an empty group is deleted with its
// offsets, a group with members is not (NON_EMPTY_GROUP), an unknown one is
// GROUP_ID_NOT_FOUND; a partition's offset is deleted unless a member
// subscribes to its topic (GROUP_SUBSCRIBED_TO_TOPIC). The deletions are
// durable: a restarted gateway has not got them back.
func TestDeleteGroupsAndOffsets(t *testing.T) {
	dir := t.TempDir()
	addr := freeAddr(t)
	g := startGateway(t, dir, addr)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const topic = "dg"
	adm := kadm.NewClient(mustClient(t, addr))
	if resp, err := adm.CreateTopics(ctx, 2, 1, nil, topic); err != nil || resp[topic].Err != nil {
		t.Fatalf("create topic: %v %v", err, resp[topic].Err)
	}
	if err := mustClient(t, addr).ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("x")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	commit := func(group string) {
		var os kadm.Offsets
		os.Add(kadm.Offset{Topic: topic, Partition: 0, At: 1, LeaderEpoch: -1})
		os.Add(kadm.Offset{Topic: topic, Partition: 1, At: 0, LeaderEpoch: -1})
		if resp, err := adm.CommitOffsets(ctx, group, os); err != nil || resp.Error() != nil {
			t.Fatalf("commit offsets of %s: %v %v", group, err, resp.Error())
		}
	}
	commit("stale")
	commit("partial")

	// A live member of "active", subscribed to the topic.
	member, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumerGroup("active"), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer member.Close()
	for got := 0; got == 0; {
		fs := member.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		got = fs.NumRecords()
	}
	if err := member.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}

	del, err := adm.DeleteGroups(ctx, "stale", "active", "never-was")
	if err != nil {
		t.Fatal(err)
	}
	for group, want := range map[string]error{"stale": nil, "active": kerr.NonEmptyGroup, "never-was": kerr.GroupIDNotFound} {
		if got := del[group].Err; !errors.Is(got, want) && !(got == nil && want == nil) {
			t.Errorf("DeleteGroups %s: %v, want %v", group, got, want)
		}
	}
	offs, err := adm.DeleteOffsets(ctx, "partial", kadm.TopicsSet{topic: {0: {}}})
	if err != nil || offs.Error() != nil {
		t.Fatalf("DeleteOffsets partial %s/0: %v %v", topic, err, offs.Error())
	}
	subscribed, err := adm.DeleteOffsets(ctx, "active", kadm.TopicsSet{topic: {0: {}}})
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := subscribed.Lookup(topic, 0); !errors.Is(e, kerr.GroupSubscribedToTopic) {
		t.Fatalf("DeleteOffsets of a topic a member subscribes to: %v, want GROUP_SUBSCRIBED_TO_TOPIC", e)
	}

	check := func(when string) {
		t.Helper()
		stale, err := adm.FetchOffsets(ctx, "stale")
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		stale.Each(func(o kadm.OffsetResponse) {
			if o.At >= 0 {
				n++
			}
		})
		if n != 0 {
			t.Fatalf("%s: the deleted group has %d committed offsets", when, n)
		}
		partial, err := adm.FetchOffsets(ctx, "partial")
		if err != nil {
			t.Fatal(err)
		}
		_, has0 := partial.Lookup(topic, 0)
		p1, has1 := partial.Lookup(topic, 1)
		if has0 || !has1 || p1.At != 0 {
			t.Fatalf("%s: group partial has partition 0 %v, partition 1 %v (%+v); want only partition 1", when, has0, has1, p1)
		}
	}
	// Kafka 4's admin: ListGroups v5 gives each group's type
	// (`kafka-consumer-groups --list --type` shows Classic) and filters by
	// it; every group here is a classic one.
	classic, err := adm.ListGroupsByType(ctx, []string{"classic"})
	if err != nil {
		t.Fatal(err)
	}
	if lg, ok := classic["active"]; !ok || lg.GroupType != "classic" || lg.State != "Stable" {
		t.Fatalf("ListGroups of type classic: %+v, want active, classic and Stable", classic)
	}
	if other, err := adm.ListGroupsByType(ctx, []string{"consumer"}); err != nil || len(other) != 0 {
		t.Fatalf("ListGroups of type consumer: %v %v, want none", other, err)
	}

	check("after the deletions")
	member.Close()
	g.stop()
	g = startGateway(t, dir, addr)
	check("after a restart")
	_ = g
}

// DescribeCluster v2 (`kafka-cluster list-endpoints
// --include-fenced-brokers`): the gateway lists itself, never fenced.
func TestDescribeClusterV2(t *testing.T) {
	g := startGateway(t, t.TempDir(), "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := kmsg.NewPtrDescribeClusterRequest()
	req.Version, req.IncludeFencedBrokers = 2, true
	resp, err := req.RequestWith(ctx, mustClient(t, g.addr))
	if err != nil || resp.ErrorCode != 0 || len(resp.Brokers) != 1 || resp.Brokers[0].IsFenced {
		t.Fatalf("DescribeCluster v2: %v %+v, want this gateway alone, not fenced", err, resp)
	}
}
