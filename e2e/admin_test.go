package e2e

import (
	"context"
	"testing"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestAdminAPIs covers what admin tools and the Java AdminClient ask:
// DescribeConfigs of a topic (and of an unknown one), DescribeCluster,
// and ListGroups/DescribeGroups after a commit.
func TestAdminAPIs(t *testing.T) {
	dir := t.TempDir()
	setupTable(t, dir)
	g := startGateway(t, dir, "", "--compression", "lz4")
	ctx := context.Background()
	cl := mustClient(t, g.addr)
	adm := kadm.NewClient(cl)

	rcs, err := adm.DescribeTopicConfigs(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("describe configs: %v %v", err, rc.Err)
	}
	got := map[string]string{}
	for _, c := range rc.Configs {
		got[c.Key] = c.MaybeValue()
	}
	if got["compression.type"] != "lz4" || got["lakegw.format"] != "debezium-json" || got["cleanup.policy"] != "delete" {
		t.Fatalf("topic configs: %v", got)
	}
	if rcs, err := adm.DescribeTopicConfigs(ctx, "no.such_table"); err == nil {
		if rc, _ := rcs.On("no.such_table", nil); rc.Err == nil {
			t.Fatal("configs of an unknown topic must be an error")
		}
	}

	req := kmsg.NewPtrDescribeClusterRequest()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ErrorCode != 0 || len(resp.Brokers) != 1 || resp.ClusterID == "" || resp.ControllerID != resp.Brokers[0].NodeID {
		t.Fatalf("describe cluster: %+v", resp)
	}
	if addr := resp.Brokers[0].Host; addr != "127.0.0.1" {
		t.Fatalf("advertised host %q", addr)
	}

	commit := kadm.Offsets{}
	commit.AddOffset(topic, 0, 10, -1)
	if _, err := adm.CommitOffsets(ctx, "admin-group", commit); err != nil {
		t.Fatal(err)
	}
	groups, err := adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := groups["admin-group"]; !ok {
		t.Fatalf("ListGroups: %v", groups.Groups())
	}
	dg, err := adm.DescribeGroups(ctx, "admin-group")
	if err != nil {
		t.Fatal(err)
	}
	if d := dg["admin-group"]; d.Err != nil || d.State != "Empty" {
		t.Fatalf("DescribeGroups: state %q err %v", d.State, d.Err)
	}
	// A commit to a partition the topic does not have is refused.
	bad := kadm.Offsets{}
	bad.AddOffset(topic, 7, 1, -1)
	cr, err := adm.CommitOffsets(ctx, "admin-group", bad)
	if err != nil {
		t.Fatal(err)
	}
	if e := cr.Error(); !isErr(e, kerr.UnknownTopicOrPartition) {
		t.Fatalf("commit to partition 7: %v", e)
	}
}

func isErr(err error, want *kerr.Error) bool {
	ke, ok := err.(*kerr.Error)
	return ok && ke.Code == want.Code
}
