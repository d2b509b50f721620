package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestAdminAPIs covers what admin tools and the Java AdminClient ask:
// DescribeConfigs of a topic (and of an unknown one), DescribeCluster,
// and ListGroups/DescribeGroups after a commit. The retention configs are
// the real ones: a table lakegw does not write is bounded by its own
// snapshot expiry (unbounded, or history.expire.max-snapshot-age-ms), a
// lakegw LSM table by its lakegw.retention.* properties.
func TestAdminAPIs(t *testing.T) {
	dir := t.TempDir()
	w := setupTable(t, dir)
	aged := newTableWriterOn(t, w.cat, "e2e", "aged")
	aged.appendRows(1)
	setTableProps(t, w.cat, aged.ident, map[string]string{"history.expire.max-snapshot-age-ms": "3600000"})
	if out, err := exec.Command(lakegwBin, "table", "create", "e2e.pk", "--schema", "id long", "--primary-key", "id",
		"--data-dir", dir, "--log-level", "warn").CombinedOutput(); err != nil {
		t.Fatalf("create LSM table: %v\n%s", err, out)
	}
	setTableProps(t, w.cat, table.Identifier{"e2e", "pk"}, map[string]string{
		"lakegw.retention.ms": "7200000", "lakegw.retention.bytes": "1048576", "lakegw.consumer.max-pin": "600000",
		"lakegw.consumer.max-pin-snapshots": "100"})
	g := startGateway(t, dir, "", "--compression", "lz4")
	ctx := context.Background()
	cl := mustClient(t, g.addr)
	adm := kadm.NewClient(cl)

	got := topicConfigs(t, adm, topic)
	if got["compression.type"] != "lz4" || got["lakegw.format"] != "debezium-json" {
		t.Fatalf("topic configs: %v", got)
	}
	for name, want := range map[string]map[string]string{
		topic: {"cleanup.policy": "compact,delete", "retention.ms": "-1", "retention.bytes": "-1",
			"lakegw.consumer.max-pin": "86400000", "lakegw.consumer.max-pin-snapshots": "3600"},
		"e2e.aged": {"cleanup.policy": "compact,delete", "retention.ms": "3600000", "retention.bytes": "-1"},
		"e2e.pk": {"cleanup.policy": "compact,delete", "retention.ms": "7200000", "retention.bytes": "1048576",
			"lakegw.consumer.max-pin": "600000", "lakegw.consumer.max-pin-snapshots": "100"},
	} {
		got := topicConfigs(t, adm, name)
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: %s = %q, want %q (all: %v)", name, k, got[k], v, got)
			}
		}
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
	// The committed offset pins the snapshot holding it (the second:
	// offsets 5-2504).
	snap := w.Snaps[1].SnapshotID
	if got, want := topicConfigs(t, adm, topic)["lakegw.pinned-by"], fmt.Sprintf("group admin-group partition 0 at offset 10 (snapshot %d, committed ", snap); !strings.HasPrefix(got, want) {
		t.Fatalf("lakegw.pinned-by = %q, want it to start with %q", got, want)
	}
	if got := topicConfigs(t, adm, "e2e.aged")["lakegw.pinned-by"]; got != "none" {
		t.Fatalf("lakegw.pinned-by of an unread topic = %q, want none", got)
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

// topicConfigs describes one topic's configs with kadm.
func topicConfigs(t *testing.T, adm *kadm.Client, topic string) map[string]string {
	t.Helper()
	rcs, err := adm.DescribeTopicConfigs(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := rcs.On(topic, nil)
	if err != nil || rc.Err != nil {
		t.Fatalf("describe configs of %s: %v %v", topic, err, rc.Err)
	}
	got := map[string]string{}
	for _, c := range rc.Configs {
		got[c.Key] = c.MaybeValue()
	}
	return got
}

// setTableProps commits table properties.
func setTableProps(t *testing.T, cat catalog.Catalog, ident table.Identifier, props map[string]string) {
	t.Helper()
	ctx := context.Background()
	// The gateway's own commits (a producer, maintenance) may land in
	// between: reload and try again, as any writer does.
	for attempt := 1; ; attempt++ {
		tbl, err := cat.LoadTable(ctx, ident)
		if err != nil {
			t.Fatal(err)
		}
		tx := tbl.NewTransaction()
		if err := tx.SetProperties(props); err != nil {
			t.Fatal(err)
		}
		_, err = tx.Commit(ctx)
		if err == nil {
			return
		}
		if attempt >= 20 {
			t.Fatalf("set properties of %v: %v", ident, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func isErr(err error, want *kerr.Error) bool {
	ke, ok := err.(*kerr.Error)
	return ok && ke.Code == want.Code
}
