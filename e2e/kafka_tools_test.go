package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lakegw/lakegw/lake"
	"github.com/lakegw/lakegw/produce"
)

// Apache Kafka 4.4's own command-line tools against the built gateway
// (issue 18): the bin/kafka-*.sh scripts' main classes, fetched from Maven
// Central by e2e/kafkatools/kafkatools.sh (scripts/install-test-deps.sh
// fetches them before CI runs). Each test parses what a tool prints and
// compares it with what franz-go and kadm see from the same gateway: an
// exit code alone would pass a tool that silently fell back or printed
// nothing. A tool run takes about a second even with the class-data-sharing
// archive the script dumps (three without it), so each test shares one
// gateway among few tool runs.

// kafkaToolsScript is e2e/kafkatools/kafkatools.sh.
var kafkaToolsScript = filepath.Join("kafkatools", "kafkatools.sh")

var (
	kafkaToolsOnce sync.Once
	kafkaToolsErr  error
	kafkaToolsOut  []byte
)

// requireKafkaTools fetches the tools once per test binary (quick when the
// cache is complete), or skips the test, failing it on CI, when Java or
// Maven is missing.
func requireKafkaTools(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("java"); err != nil {
		skipOrFailMissing(t, "java (17+, for Kafka's command-line tools)")
	}
	kafkaToolsOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		kafkaToolsOut, kafkaToolsErr = exec.CommandContext(ctx, "bash", kafkaToolsScript, "fetch").CombinedOutput()
	})
	if kafkaToolsErr != nil {
		if _, err := exec.LookPath("mvn"); err != nil {
			skipOrFailMissing(t, "maven (fetches Kafka's command-line tools)")
		}
		t.Fatalf("kafkatools.sh fetch: %v\n%s", kafkaToolsErr, kafkaToolsOut)
	}
}

// toolRun is what one tool run printed.
type toolRun struct {
	stdout, stderr string
	err            error // the exit status, or the deadline
}

func (r toolRun) String() string {
	return fmt.Sprintf("error: %v\nstdout:\n%s\nstderr:\n%s", r.err, r.stdout, r.stderr)
}

// kafkaToolTimeout bounds one tool run, a JVM that hangs included; the
// console consumer is also given a shorter --timeout-ms of its own, so that
// it reports what it read.
const kafkaToolTimeout = 60 * time.Second

// runKafkaTool runs one of Kafka's tools (kafkatools.sh names them as the
// bin/*.sh scripts) with args and stdin as its input.
func runKafkaTool(t *testing.T, stdin, tool string, args ...string) toolRun {
	t.Helper()
	requireKafkaTools(t)
	ctx, cancel := context.WithTimeout(context.Background(), kafkaToolTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", append([]string{kafkaToolsScript, tool}, args...)...)
	// requireKafkaTools fetched: spare each run the script's checks.
	cmd.Env = append(os.Environ(), "KAFKATOOLS_SKIP_FETCH=1")
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// The script execs java, so the deadline's kill reaches the JVM.
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	err := cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("no exit within %v: %w", kafkaToolTimeout, ctx.Err())
	}
	t.Logf("%s %s: %.1fs", tool, strings.Join(args, " "), time.Since(start).Seconds())
	return toolRun{stdout: stdout.String(), stderr: stderr.String(), err: err}
}

// mustKafkaTool is runKafkaTool for a run that must exit 0.
func mustKafkaTool(t *testing.T, g *gateway, stdin, tool string, args ...string) toolRun {
	t.Helper()
	r := runKafkaTool(t, stdin, tool, args...)
	if r.err != nil {
		t.Fatalf("%s %s failed\n%s\ngateway logs (tail):\n%s", tool, strings.Join(args, " "), r, tailLines(g.Logs(), 20))
	}
	return r
}

// toolsData is a gateway holding topic kafkaToolsTopic: two partitions
// with different counts, produced in two committed rounds, and the
// millisecond between them.
type toolsData struct {
	g       *gateway
	cl      *kgo.Client
	adm     *kadm.Client
	first   map[int32]int64 // records per partition of the first round
	hwm     map[int32]int64 // records per partition in all
	values  []string        // every value produced, in no particular order
	between int64           // a millisecond after the first round's commit and before the second round
}

const kafkaToolsTopic = "tools"

// startToolsData starts a gateway and fills kafkaToolsTopic.
func startToolsData(t *testing.T, ctx context.Context) *toolsData {
	t.Helper()
	g := startGateway(t, t.TempDir(), "", "--commit-interval", "20ms")
	cl, err := kgo.NewClient(kgo.SeedBrokers(g.addr), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	d := &toolsData{g: g, cl: cl, adm: kadm.NewClient(cl), first: map[int32]int64{0: 3, 1: 2}, hwm: map[int32]int64{}}
	if resp, err := d.adm.CreateTopics(ctx, 2, 1, nil, kafkaToolsTopic); err != nil || resp[kafkaToolsTopic].Err != nil {
		t.Fatalf("create topic: %v %v", err, resp[kafkaToolsTopic].Err)
	}
	produce := func(round int, counts map[int32]int64) {
		var recs []*kgo.Record
		for p, n := range counts {
			for i := range n {
				v := fmt.Sprintf("r%d-p%d-%d", round, p, i)
				recs = append(recs, &kgo.Record{Topic: kafkaToolsTopic, Partition: p, Key: []byte(fmt.Sprintf("k%d", i)), Value: []byte(v)})
				d.values = append(d.values, v)
				d.hwm[p]++
			}
		}
		// ProduceSync returns once the records' Iceberg commit is made
		// (acks=all): everything acknowledged is visible.
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce round %d: %v", round, err)
		}
	}
	produce(1, d.first)
	// ListOffsets by timestamp finds the first snapshot committed at or
	// after it: a millisecond after the first round's acknowledgement is
	// after its commit, and the second round commits later still.
	d.between = time.Now().UnixMilli() + 1
	for time.Now().UnixMilli() < d.between {
		time.Sleep(100 * time.Microsecond) // a millisecond boundary, no longer
	}
	produce(2, map[int32]int64{0: 2, 1: 2})
	return d
}

// toolTable parses the whitespace-separated table a tool printed under a
// header line whose first column is first: one map per row, by column
// name. A row ends at a blank line or another header.
func toolTable(out, first string) []map[string]string {
	var cols []string
	var rows []map[string]string
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) > 0 && f[0] == first:
			cols = f
		case len(f) == 0:
			cols = nil
		case cols != nil && len(f) == len(cols):
			row := map[string]string{}
			for i, c := range cols {
				row[c] = f[i]
			}
			rows = append(rows, row)
		}
	}
	return rows
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// nonEmptyLines is out's lines with content, trimmed.
func nonEmptyLines(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// kafka-topics --list and --describe. Kafka 4's --describe asks
// DescribeTopicPartitions and falls back to Metadata when a broker does
// not serve it; the fallback shows as "Elr: N/A" (TopicCommand prints N/A
// when the partition info has no ELR list, which only Metadata leaves
// out), so the test requires the DescribeTopicPartitions answer.
func TestKafkaToolsTopics(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	d := startToolsData(t, ctx)
	topics, err := d.adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := topics.Names()
	sort.Strings(want)

	list := mustKafkaTool(t, d.g, "", "kafka-topics", "--bootstrap-server", d.g.addr, "--list")
	if got := nonEmptyLines(list.stdout); !slices.Equal(got, want) {
		t.Errorf("kafka-topics --list: %q, kadm lists %q", got, want)
	}

	desc := mustKafkaTool(t, d.g, "", "kafka-topics", "--bootstrap-server", d.g.addr, "--describe", "--topic", kafkaToolsTopic)
	md, err := d.adm.Metadata(ctx, kafkaToolsTopic)
	if err != nil {
		t.Fatal(err)
	}
	td := md.Topics[kafkaToolsTopic]
	// Topic: tools	TopicId: ...	PartitionCount: 2	ReplicationFactor: 1	Configs: ...
	//	Topic: tools	Partition: 0	Leader: 0	Replicas: 0	Isr: 0	Elr: 	LastKnownElr:
	var head map[string]string
	parts := map[int32]map[string]string{}
	for _, line := range strings.Split(desc.stdout, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		kv := map[string]string{}
		for _, field := range strings.Split(strings.TrimLeft(line, "\t"), "\t") {
			k, v, _ := strings.Cut(field, ":")
			kv[k] = strings.TrimSpace(v)
		}
		if strings.HasPrefix(line, "\t") {
			p, err := strconv.Atoi(kv["Partition"])
			if err != nil {
				t.Fatalf("kafka-topics --describe: partition line %q", line)
			}
			parts[int32(p)] = kv
		} else {
			head = kv
		}
	}
	// Kafka prints a Uuid in URL-safe base64 without padding.
	id := base64.RawURLEncoding.EncodeToString(td.ID[:])
	if head["Topic"] != kafkaToolsTopic || head["TopicId"] != id ||
		head["PartitionCount"] != strconv.Itoa(len(td.Partitions)) || head["ReplicationFactor"] != "1" {
		t.Errorf("kafka-topics --describe: topic line %v; kadm: id %s, %d partitions", head, id, len(td.Partitions))
	}
	if len(parts) != len(td.Partitions) {
		t.Errorf("kafka-topics --describe: %d partition lines, kadm has %d partitions\n%s", len(parts), len(td.Partitions), desc.stdout)
	}
	for p, pd := range td.Partitions {
		kv := parts[p]
		leader := strconv.Itoa(int(pd.Leader))
		if kv["Leader"] != leader || kv["Replicas"] != leader || kv["Isr"] != leader {
			t.Errorf("kafka-topics --describe: partition %d %v; kadm: leader %s", p, kv, leader)
		}
		if kv["Elr"] == "N/A" || kv["LastKnownElr"] == "N/A" {
			t.Errorf("kafka-topics --describe: partition %d has Elr %q, LastKnownElr %q: the tool fell back to Metadata, "+
				"so the gateway does not serve DescribeTopicPartitions", p, kv["Elr"], kv["LastKnownElr"])
		}
	}
}

// kafka-consumer-groups: --list, --list --type (Classic, from ListGroups
// v5), --describe (offsets, log end offsets, lag and members),
// --reset-offsets --to-earliest --execute, --delete-offsets and --delete,
// each checked against kadm.
func TestKafkaToolsConsumerGroups(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	d := startToolsData(t, ctx)
	const idle, live = "tools-idle", "tools-live"
	// An empty group with committed offsets...
	var commit kadm.Offsets
	commit.AddOffset(kafkaToolsTopic, 0, 2, -1)
	commit.AddOffset(kafkaToolsTopic, 1, d.hwm[1], -1)
	if resp, err := d.adm.CommitOffsets(ctx, idle, commit); err != nil || resp.Error() != nil {
		t.Fatalf("commit offsets of %s: %v %v", idle, err, resp.Error())
	}
	// ...and a group with a member that read everything and committed.
	member, err := kgo.NewClient(kgo.SeedBrokers(d.g.addr), kgo.ConsumerGroup(live), kgo.ConsumeTopics(kafkaToolsTopic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.ClientID("tools-live-member"), kgo.DisableAutoCommit())
	if err != nil {
		t.Fatal(err)
	}
	defer member.Close()
	for n := 0; n < len(d.values); {
		fs := member.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatal(err)
		}
		n += fs.NumRecords()
	}
	if err := member.CommitUncommittedOffsets(ctx); err != nil {
		t.Fatal(err)
	}

	listed, err := d.adm.ListGroups(ctx)
	if err != nil {
		t.Fatal(err)
	}
	list := mustKafkaTool(t, d.g, "", "kafka-consumer-groups", "--bootstrap-server", d.g.addr, "--list")
	if got, want := nonEmptyLines(list.stdout), sortedKeys(listed); !slices.Equal(sorted(got), want) {
		t.Errorf("kafka-consumer-groups --list: %q, kadm lists %q", got, want)
	}
	// GROUP TYPE (Kafka 4 asks ListGroups v5 for the group types; a
	// gateway answering without them would show Unknown).
	typed := mustKafkaTool(t, d.g, "", "kafka-consumer-groups", "--bootstrap-server", d.g.addr, "--list", "--type")
	rows := toolTable(typed.stdout, "GROUP")
	types := map[string]string{}
	for _, r := range rows {
		types[r["GROUP"]] = r["TYPE"]
	}
	if len(types) != len(listed) || types[idle] != "Classic" || types[live] != "Classic" {
		t.Errorf("kafka-consumer-groups --list --type: %v, want %s and %s, both Classic\n%s", types, idle, live, typed.stdout)
	}

	// GROUP TOPIC PARTITION CURRENT-OFFSET LOG-END-OFFSET LAG CONSUMER-ID HOST CLIENT-ID
	desc := mustKafkaTool(t, d.g, "", "kafka-consumer-groups", "--bootstrap-server", d.g.addr, "--describe", "--all-groups")
	described, err := d.adm.DescribeGroups(ctx, idle, live)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]string{}
	for _, r := range toolTable(desc.stdout, "GROUP") {
		got[r["GROUP"]+"/"+r["PARTITION"]] = r
	}
	for _, group := range []string{idle, live} {
		fetched, err := d.adm.FetchOffsets(ctx, group)
		if err != nil {
			t.Fatal(err)
		}
		// The live member owns every partition.
		owner := map[int32]kadm.DescribedGroupMember{}
		for _, m := range described[group].Members {
			if ca, ok := m.Assigned.AsConsumer(); ok {
				for _, tp := range ca.Topics {
					for _, p := range tp.Partitions {
						owner[p] = m
					}
				}
			}
		}
		for p, end := range d.hwm {
			o, ok := fetched.Lookup(kafkaToolsTopic, p)
			r := got[fmt.Sprintf("%s/%d", group, p)]
			if !ok || r == nil {
				t.Errorf("kafka-consumer-groups --describe: %s partition %d: row %v, kadm offset %v (%v)\n%s", group, p, r, o, ok, desc.stdout)
				continue
			}
			want := map[string]string{"TOPIC": kafkaToolsTopic, "CURRENT-OFFSET": strconv.FormatInt(o.At, 10),
				"LOG-END-OFFSET": strconv.FormatInt(end, 10), "LAG": strconv.FormatInt(end-o.At, 10),
				"CONSUMER-ID": "-", "HOST": "-", "CLIENT-ID": "-"}
			if m, ok := owner[p]; ok {
				want["CONSUMER-ID"], want["HOST"], want["CLIENT-ID"] = m.MemberID, m.ClientHost, m.ClientID
			} else if group == live {
				t.Errorf("kadm: no member of %s owns partition %d", live, p)
			}
			for k, v := range want {
				if r[k] != v {
					t.Errorf("kafka-consumer-groups --describe: %s partition %d: %s = %q, kadm says %q", group, p, k, r[k], v)
				}
			}
		}
	}

	// GROUP TOPIC PARTITION NEW-OFFSET
	reset := mustKafkaTool(t, d.g, "", "kafka-consumer-groups", "--bootstrap-server", d.g.addr,
		"--reset-offsets", "--to-earliest", "--execute", "--group", idle, "--topic", kafkaToolsTopic)
	starts, err := d.adm.ListStartOffsets(ctx, kafkaToolsTopic)
	if err != nil {
		t.Fatal(err)
	}
	fetched, err := d.adm.FetchOffsets(ctx, idle)
	if err != nil {
		t.Fatal(err)
	}
	resetRows := toolTable(reset.stdout, "GROUP")
	if len(resetRows) != len(d.hwm) {
		t.Errorf("kafka-consumer-groups --reset-offsets: %d rows, want %d\n%s", len(resetRows), len(d.hwm), reset.stdout)
	}
	for _, r := range resetRows {
		p, _ := strconv.Atoi(r["PARTITION"])
		start, _ := starts.Lookup(kafkaToolsTopic, int32(p))
		o, _ := fetched.Lookup(kafkaToolsTopic, int32(p))
		if r["NEW-OFFSET"] != strconv.FormatInt(start.Offset, 10) || o.At != start.Offset {
			t.Errorf("kafka-consumer-groups --reset-offsets --to-earliest: partition %d: tool %v, committed now %d, log start %d", p, r, o.At, start.Offset)
		}
	}

	// TOPIC PARTITION STATUS
	delOffsets := mustKafkaTool(t, d.g, "", "kafka-consumer-groups", "--bootstrap-server", d.g.addr,
		"--delete-offsets", "--group", idle, "--topic", kafkaToolsTopic+":0")
	if rows := toolTable(delOffsets.stdout, "TOPIC"); len(rows) != 1 || rows[0]["PARTITION"] != "0" || rows[0]["STATUS"] != "Successful" {
		t.Errorf("kafka-consumer-groups --delete-offsets: %v\n%s", rows, delOffsets)
	}
	if fetched, err := d.adm.FetchOffsets(ctx, idle); err != nil {
		t.Fatal(err)
	} else if _, has0 := fetched.Lookup(kafkaToolsTopic, 0); has0 {
		t.Errorf("kafka-consumer-groups --delete-offsets: kadm still fetches %s partition 0 of %s", kafkaToolsTopic, idle)
	} else if _, has1 := fetched.Lookup(kafkaToolsTopic, 1); !has1 {
		t.Errorf("kafka-consumer-groups --delete-offsets: partition 1 of %s went too", idle)
	}

	del := mustKafkaTool(t, d.g, "", "kafka-consumer-groups", "--bootstrap-server", d.g.addr, "--delete", "--group", idle)
	if !strings.Contains(del.stdout, "Deletion of requested consumer groups ('"+idle+"') was successful.") {
		t.Errorf("kafka-consumer-groups --delete: %s", del)
	}
	if after, err := d.adm.ListGroups(ctx); err != nil {
		t.Fatal(err)
	} else if _, ok := after[idle]; ok || len(after) != len(listed)-1 {
		t.Errorf("after kafka-consumer-groups --delete: kadm lists %v", sortedKeys(after))
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	sort.Strings(s)
	return s
}

// kafka-get-offsets for every --time Kafka 4.4 knows. Without tiered
// storage Kafka answers -4 (earliest local) as -2 (earliest), and -5
// (latest tiered) and -6 (earliest pending upload) with offset -1, which
// the tool leaves out (UnifiedLog.fetchOffsetByTimestamp and
// fetchEarliestPendingUploadOffset with remote storage off; GetOffsetShell
// prints only offsets other than -1). A timestamp finds the first offset
// of the first snapshot committed at or after it. The Java admin needs
// ListOffsets v7 for -3, v8 for -4, v9 for -5 and v11 for -6, and fails
// the partition when the gateway does not serve them.
func TestKafkaToolsGetOffsets(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	d := startToolsData(t, ctx)
	starts, err := d.adm.ListStartOffsets(ctx, kafkaToolsTopic)
	if err != nil {
		t.Fatal(err)
	}
	ends, err := d.adm.ListEndOffsets(ctx, kafkaToolsTopic)
	if err != nil {
		t.Fatal(err)
	}
	at, err := d.adm.ListOffsetsAfterMilli(ctx, d.between, kafkaToolsTopic)
	if err != nil {
		t.Fatal(err)
	}
	maxTs := listOffsetsRaw(t, ctx, d.cl, -3)
	offsetsOf := func(lo kadm.ListedOffsets) map[int32]int64 {
		out := map[int32]int64{}
		lo.Each(func(o kadm.ListedOffset) {
			if o.Err != nil {
				t.Fatalf("kadm ListOffsets partition %d: %v", o.Partition, o.Err)
			}
			out[o.Partition] = o.Offset
		})
		return out
	}
	// What the gateway's data must give, from how it was produced: kadm's
	// answers are the gateway's too, so they are checked against these.
	wantEarliest := map[int32]int64{0: 0, 1: 0}
	wantAt := map[int32]int64{0: d.first[0], 1: d.first[1]}
	wantMax := map[int32]int64{0: d.hwm[0] - 1, 1: d.hwm[1] - 1}
	for name, c := range map[string]struct{ got, want map[int32]int64 }{
		"earliest": {offsetsOf(starts), wantEarliest}, "latest": {offsetsOf(ends), d.hwm},
		"after the first round": {offsetsOf(at), wantAt}, "max timestamp": {maxTs, wantMax},
	} {
		if fmt.Sprint(c.got) != fmt.Sprint(c.want) {
			t.Errorf("franz-go ListOffsets %s: %v, want %v", name, c.got, c.want)
		}
	}
	for _, c := range []struct {
		time string
		want map[int32]int64 // nil: no line for any partition
	}{
		{"-1", d.hwm},
		{"-2", wantEarliest},
		{"-3", wantMax},
		{"-4", wantEarliest},
		{"-5", nil},
		{"-6", nil},
		{strconv.FormatInt(d.between, 10), wantAt},
		// After everything committed: no offset, so no line.
		{strconv.FormatInt(time.Now().Add(time.Hour).UnixMilli(), 10), nil},
	} {
		r := runKafkaTool(t, "", "kafka-get-offsets", "--bootstrap-server", d.g.addr, "--topic", kafkaToolsTopic, "--time", c.time)
		// A partition the admin failed for (an UnsupportedVersionException
		// when the gateway does not serve the ListOffsets version a time
		// needs) is "Skip getting offsets for topic-partition ... due to
		// error: ..." on stderr, with exit status 0.
		if r.err != nil || strings.Contains(r.stderr, "Skip getting offsets") || strings.Contains(r.stderr, "Error occurred") {
			t.Errorf("kafka-get-offsets --time %s failed\n%s", c.time, r)
			continue
		}
		got := map[int32]int64{}
		for _, line := range nonEmptyLines(r.stdout) {
			// topic:partition:offset
			f := strings.Split(line, ":")
			if len(f) != 3 || f[0] != kafkaToolsTopic {
				t.Fatalf("kafka-get-offsets --time %s: line %q\n%s", c.time, line, r)
			}
			p, err1 := strconv.Atoi(f[1])
			o, err2 := strconv.ParseInt(f[2], 10, 64)
			if err1 != nil || err2 != nil {
				t.Fatalf("kafka-get-offsets --time %s: line %q", c.time, line)
			}
			got[int32(p)] = o
		}
		want := c.want
		if want == nil {
			want = map[int32]int64{}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("kafka-get-offsets --time %s: %v, want %v\n%s", c.time, got, want, r)
		}
	}
}

// listOffsetsRaw asks ListOffsets for a special timestamp (-3, max
// timestamp, which kadm has no call for) at the newest version both sides
// speak.
func listOffsetsRaw(t *testing.T, ctx context.Context, cl *kgo.Client, ts int64) map[int32]int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = kafkaToolsTopic
	for p := range int32(2) {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp = p, ts
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	for _, tr := range resp.Topics {
		for _, pr := range tr.Partitions {
			if pr.ErrorCode != 0 {
				t.Fatalf("ListOffsets %d partition %d: error %d", ts, pr.Partition, pr.ErrorCode)
			}
			out[pr.Partition] = pr.Offset
		}
	}
	return out
}

// kafka-cluster cluster-id and list-endpoints --include-fenced-brokers
// (DescribeCluster v2), and kafka-configs --describe of topics, with and
// without --all, against Metadata, DescribeCluster and DescribeConfigs as
// franz-go sees them.
func TestKafkaToolsClusterAndConfigs(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	d := startToolsData(t, ctx)
	md, err := d.adm.BrokerMetadata(ctx)
	if err != nil {
		t.Fatal(err)
	}
	id := mustKafkaTool(t, d.g, "", "kafka-cluster", "cluster-id", "--bootstrap-server", d.g.addr)
	if got := strings.TrimSpace(id.stdout); got != "Cluster ID: "+md.Cluster || md.Cluster == "" {
		t.Errorf("kafka-cluster cluster-id: %q, kadm: cluster %q", got, md.Cluster)
	}

	dc := kmsg.NewPtrDescribeClusterRequest()
	dc.Version, dc.IncludeFencedBrokers = 2, true
	dcr, err := dc.RequestWith(ctx, d.cl)
	if err != nil || dcr.ErrorCode != 0 {
		t.Fatalf("DescribeCluster v2: %v %+v", err, dcr)
	}
	// ID HOST PORT RACK STATE ENDPOINT_TYPE
	ep := mustKafkaTool(t, d.g, "", "kafka-cluster", "list-endpoints", "--include-fenced-brokers", "--bootstrap-server", d.g.addr)
	rows := toolTable(ep.stdout, "ID")
	if len(rows) != len(dcr.Brokers) {
		t.Fatalf("kafka-cluster list-endpoints: %d rows, DescribeCluster has %d brokers\n%s", len(rows), len(dcr.Brokers), ep)
	}
	for i, b := range dcr.Brokers {
		r := rows[i]
		if r["ID"] != strconv.Itoa(int(b.NodeID)) || r["HOST"] != b.Host || r["PORT"] != strconv.Itoa(int(b.Port)) ||
			r["STATE"] != "unfenced" || r["ENDPOINT_TYPE"] != "broker" {
			t.Errorf("kafka-cluster list-endpoints: %v; DescribeCluster: %+v", r, b)
		}
	}

	// A config set on the topic (IncrementalAlterConfigs, as kafka-configs
	// --alter does): Kafka describes it as a dynamic topic config, which is
	// what kafka-configs --describe shows without --all.
	alter, err := d.adm.AlterTopicConfigs(ctx, []kadm.AlterConfig{{Name: "lakegw.commit.interval.ms", Value: kadm.StringPtr("20")}}, kafkaToolsTopic)
	if err != nil || alter[0].Err != nil {
		t.Fatalf("alter lakegw.commit.interval.ms of %s: %v %v", kafkaToolsTopic, err, alter)
	}
	topics, err := d.adm.ListTopics(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rcs, err := d.adm.DescribeTopicConfigs(ctx, topics.Names()...)
	if err != nil {
		t.Fatal(err)
	}
	wantAll, wantDynamic := map[string]map[string]string{}, map[string]map[string]string{}
	for _, rc := range rcs {
		if rc.Err != nil {
			t.Fatalf("DescribeConfigs %s: %v", rc.Name, rc.Err)
		}
		wantAll[rc.Name], wantDynamic[rc.Name] = map[string]string{}, map[string]string{}
		for _, c := range rc.Configs {
			wantAll[rc.Name][c.Key] = c.MaybeValue()
			if c.Source == kmsg.ConfigSourceDynamicTopicConfig {
				wantDynamic[rc.Name][c.Key] = c.MaybeValue()
			}
		}
	}
	if wantDynamic[kafkaToolsTopic]["lakegw.commit.interval.ms"] != "20" {
		t.Errorf("DescribeConfigs of %s after setting lakegw.commit.interval.ms=20: dynamic topic configs %v, all %v; "+
			"Kafka reports a config set on a topic with source DYNAMIC_TOPIC_CONFIG", kafkaToolsTopic, wantDynamic[kafkaToolsTopic], wantAll[kafkaToolsTopic])
	}
	// Dynamic configs for topic tools are:
	//   lakegw.commit.interval.ms=20 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:lakegw.commit.interval.ms=20}
	// (All configs for topic tools are: with --all.)
	parse := func(out, header string) map[string]map[string]string {
		got := map[string]map[string]string{}
		var cur map[string]string
		for _, line := range strings.Split(out, "\n") {
			if topic, ok := strings.CutPrefix(line, header); ok {
				cur = map[string]string{}
				got[strings.TrimSuffix(topic, " are:")] = cur
				continue
			}
			if cur == nil || strings.TrimSpace(line) == "" {
				continue
			}
			kv, _, _ := strings.Cut(strings.TrimSpace(line), " sensitive=")
			k, v, _ := strings.Cut(kv, "=")
			cur[k] = v
		}
		return got
	}
	for _, c := range []struct {
		header string
		args   []string
		want   map[string]map[string]string
	}{
		{"Dynamic configs for topic ", nil, wantDynamic},
		{"All configs for topic ", []string{"--all"}, wantAll},
	} {
		r := mustKafkaTool(t, d.g, "", "kafka-configs", append([]string{"--bootstrap-server", d.g.addr, "--describe", "--entity-type", "topics"}, c.args...)...)
		got := parse(r.stdout, c.header)
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("kafka-configs --describe --entity-type topics %s:\n got %v\nwant %v (kadm)\n%s", strings.Join(c.args, " "), got, c.want, r)
		}
	}
}

// kafka-console-producer with its defaults (idempotent, acks=all) writes
// lines into a topic; franz-go reads them back with the producer id the
// idempotent producer got, and kafka-console-consumer --from-beginning
// prints them.
func TestKafkaToolsConsoleProducerConsumer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	g := startGateway(t, t.TempDir(), "", "--commit-interval", "20ms")
	const topic = "console"
	adm := kadm.NewClient(mustClient(t, g.addr))
	if resp, err := adm.CreateTopics(ctx, 1, 1, nil, topic); err != nil || resp[topic].Err != nil {
		t.Fatalf("create topic: %v %v", err, resp[topic].Err)
	}
	var lines []string
	for i := range 20 {
		lines = append(lines, fmt.Sprintf("line %d: %s", i, strings.Repeat("x", i)))
	}
	mustKafkaTool(t, g, strings.Join(lines, "\n")+"\n", "kafka-console-producer", "--bootstrap-server", g.addr, "--topic", topic)

	recs := consumeAllOf(t, g.addr, topic, len(lines))
	for i, r := range recs {
		if string(r.Value) != lines[i] || r.Key != nil || r.Offset != int64(i) {
			t.Errorf("record %d: offset %d key %q value %q, produced %q", i, r.Offset, r.Key, r.Value, lines[i])
		}
	}
	// The console producer is idempotent by default (acks=-1, and the
	// producer's enable.idempotence default): the gateway kept its
	// sequences in the commit's summary, under the producer id that
	// InitProducerId gave it. (Served batches are rebuilt from the table and
	// carry no producer id.)
	cat, err := lake.OpenCatalog(ctx, g.dataDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	ident, err := lake.TopicIdent(topic)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	var producers []struct {
		ID        int64 `json:"id"`
		Partition int32 `json:"p"`
	}
	summary := tbl.CurrentSnapshot().Summary.Properties[produce.SummaryProducers]
	if err := json.Unmarshal([]byte(summary), &producers); err != nil || len(producers) != 1 || producers[0].ID < 0 {
		t.Errorf("the console producer's commit has producers %s (%v): want the one idempotent producer", summary, err)
	}

	r := mustKafkaTool(t, g, "", "kafka-console-consumer", "--bootstrap-server", g.addr, "--topic", topic,
		"--from-beginning", "--max-messages", strconv.Itoa(len(lines)), "--timeout-ms", "20000")
	if got := strings.Split(strings.TrimSuffix(r.stdout, "\n"), "\n"); !slices.Equal(got, lines) {
		t.Errorf("kafka-console-consumer: %q, produced %q\n%s", got, lines, r)
	}
}

// kafka-console-consumer with the KIP-848 consumer group protocol
// (group.protocol=consumer: ConsumerGroupHeartbeat instead of
// JoinGroup/SyncGroup) reads the whole topic as a member of a group, which
// then lists as a consumer group with its offsets committed at the end.
// Kafka 4.4 renamed --consumer-property to --command-property: the old
// name still works but prints a deprecation notice on stdout, among the
// records.
func TestKafkaToolsConsoleConsumerKIP848(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	d := startToolsData(t, ctx)
	const group = "tools-848"
	r := runKafkaTool(t, "", "kafka-console-consumer", "--bootstrap-server", d.g.addr, "--topic", kafkaToolsTopic,
		"--group", group, "--command-property", "group.protocol=consumer", "--from-beginning",
		"--max-messages", strconv.Itoa(len(d.values)), "--timeout-ms", "20000")
	if r.err != nil {
		t.Fatalf("kafka-console-consumer --command-property group.protocol=consumer failed\n%s", r)
	}
	if got, want := sorted(nonEmptyLines(r.stdout)), sorted(d.values); !slices.Equal(got, want) {
		t.Errorf("kafka-console-consumer (KIP-848): %q, produced %q\n%s", got, want, r)
	}
	groups, err := d.adm.ListGroupsByType(ctx, []string{"consumer"})
	if err != nil {
		t.Fatal(err)
	}
	if lg, ok := groups[group]; !ok || lg.GroupType != "consumer" {
		t.Errorf("ListGroups of type consumer: %+v, want %s", groups, group)
	}
	// The console consumer commits automatically, and on close.
	fetched, err := d.adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	for p, end := range d.hwm {
		if o, ok := fetched.Lookup(kafkaToolsTopic, p); !ok || o.At != end {
			t.Errorf("group %s partition %d: committed %v (%v), want %d", group, p, o.At, ok, end)
		}
	}
}

// kafka-consumer-groups on a group of the KIP-848 consumer protocol with
// two live members (franz-go's ServerSideBalancer): --describe --members
// --verbose shows each member's epoch and current and target assignment,
// --describe --state --verbose the group epoch, the assignor and the
// state, --list --type the Consumer type; each row as kadm's
// ConsumerGroupDescribe answer has it.
func TestKafkaToolsDescribeConsumerProtocolGroup(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	d := startToolsData(t, ctx)
	const group = "tools-848-live"
	var clients []*kgo.Client
	for i := range 2 {
		cl, err := kgo.NewClient(kgo.SeedBrokers(d.g.addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(kafkaToolsTopic),
			kgo.ServerSideBalancer(), kgo.Balancers(kgo.CooperativeStickyBalancer()),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.ClientID(fmt.Sprintf("tools-848-member-%d", i)))
		if err != nil {
			t.Fatal(err)
		}
		clients = append(clients, cl)
		pctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			for pctx.Err() == nil {
				cl.PollFetches(pctx)
			}
		}()
		t.Cleanup(func() { stop(); <-done; cl.Close() })
	}
	// Stable: both members hold their target assignment, one partition each.
	var described kadm.DescribedConsumerGroup
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		dcg, err := d.adm.DescribeConsumerGroups(ctx, group)
		if err != nil {
			t.Fatal(err)
		}
		described = dcg[group]
		if described.Err == nil && described.State == "Stable" && len(described.Members) == 2 &&
			len(described.Members[0].Assignment[kafkaToolsTopic]) == 1 && len(described.Members[1].Assignment[kafkaToolsTopic]) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("consumer group %s not stable with two members in 60 s: %+v", group, described)
		}
	}
	for _, cl := range clients {
		if err := cl.CommitUncommittedOffsets(ctx); err != nil {
			t.Fatal(err)
		}
	}

	members := mustKafkaTool(t, d.g, "", "kafka-consumer-groups", "--bootstrap-server", d.g.addr,
		"--describe", "--group", group, "--members", "--verbose")
	rows := toolTable(members.stdout, "GROUP")
	if len(rows) != 2 {
		t.Fatalf("kafka-consumer-groups --describe --members --verbose: %d rows, want 2\n%s", len(rows), members)
	}
	for _, r := range rows {
		var m *kadm.ConsumerGroupMember
		for i := range described.Members {
			if described.Members[i].MemberID == r["CONSUMER-ID"] {
				m = &described.Members[i]
			}
		}
		if m == nil {
			t.Errorf("kafka-consumer-groups --describe --members: member %q is not one kadm describes\n%s", r["CONSUMER-ID"], members.stdout)
			continue
		}
		want := map[string]string{"CLIENT-ID": m.ClientID, "#PARTITIONS": "1",
			"CURRENT-EPOCH": strconv.Itoa(int(m.MemberEpoch)), "TARGET-EPOCH": strconv.Itoa(int(described.AssignmentEpoch))}
		for k, v := range want {
			if r[k] != v {
				t.Errorf("kafka-consumer-groups --describe --members: %s %s = %q, kadm says %q\n%s", m.MemberID, k, r[k], v, members.stdout)
			}
		}
		for _, col := range []string{"CURRENT-ASSIGNMENT", "TARGET-ASSIGNMENT"} {
			if !strings.HasPrefix(r[col], kafkaToolsTopic+":") {
				t.Errorf("kafka-consumer-groups --describe --members: %s %s = %q, want a partition of %s\n%s", m.MemberID, col, r[col], kafkaToolsTopic, members.stdout)
			}
		}
	}

	state := mustKafkaTool(t, d.g, "", "kafka-consumer-groups", "--bootstrap-server", d.g.addr,
		"--describe", "--group", group, "--state", "--verbose")
	srows := toolTable(state.stdout, "GROUP")
	if len(srows) != 1 || srows[0]["ASSIGNMENT-STRATEGY"] != "uniform" || srows[0]["STATE"] != "Stable" ||
		srows[0]["#MEMBERS"] != "2" || srows[0]["GROUP-EPOCH"] != strconv.Itoa(int(described.Epoch)) {
		t.Errorf("kafka-consumer-groups --describe --state --verbose: %v, want uniform, Stable, 2 members, group epoch %d\n%s",
			srows, described.Epoch, state)
	}

	typed := mustKafkaTool(t, d.g, "", "kafka-consumer-groups", "--bootstrap-server", d.g.addr, "--list", "--type")
	found := false
	for _, r := range toolTable(typed.stdout, "GROUP") {
		if r["GROUP"] == group {
			found = r["TYPE"] == "Consumer"
		}
	}
	if !found {
		t.Errorf("kafka-consumer-groups --list --type: %s is not listed as Consumer\n%s", group, typed.stdout)
	}
}

// kafka-broker-api-versions prints the gateway's ApiVersions answer as
// franz-go gets it; and no API the gateway serves may lag the Kafka 4.4
// client's latest version, except those listed below with the reason the
// gateway stays below (a client negotiates down to what the gateway
// advertises, so a gap is a feature its clients do not get). The table is
// in the test log.
func TestKafkaToolsApiVersions(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	g := startGateway(t, t.TempDir(), "")
	cl := mustClient(t, g.addr)
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err != nil || resp.ErrorCode != 0 {
		t.Fatalf("ApiVersions: %v %+v", err, resp)
	}
	served := map[int16]kmsg.ApiVersionsResponseApiKey{}
	for _, k := range resp.ApiKeys {
		served[k.ApiKey] = k
	}

	// 127.0.0.1:PORT (id: 0 rack: null isFenced: false) -> (
	// 	Produce(0): 0 to 11 [usable: 11],
	// 	DeleteRecords(21): UNSUPPORTED,
	// 	...
	// )
	bav := mustKafkaTool(t, g, "", "kafka-broker-api-versions", "--bootstrap-server", g.addr)
	shown := map[int16]string{}
	for _, line := range strings.Split(bav.stdout, "\n") {
		line = strings.TrimSuffix(strings.TrimSpace(line), ",")
		name, rest, ok := strings.Cut(line, "): ")
		open := strings.LastIndexByte(name, '(')
		if !ok || open < 0 {
			continue
		}
		key, err := strconv.Atoi(name[open+1:])
		if err != nil {
			continue
		}
		shown[int16(key)] = rest
	}
	client := clientLatestVersions(t, g)
	if len(shown) == 0 {
		t.Fatalf("kafka-broker-api-versions printed no API\n%s", bav)
	}
	for key, rest := range shown {
		k, ok := served[key]
		var want string
		switch {
		case !ok:
			want = "UNSUPPORTED"
		case k.MinVersion == k.MaxVersion:
			want = fmt.Sprintf("%d [usable: %d]", k.MaxVersion, min(k.MaxVersion, client[key].latest))
		default:
			want = fmt.Sprintf("%d to %d [usable: %d]", k.MinVersion, k.MaxVersion, min(k.MaxVersion, client[key].latest))
		}
		if rest != want {
			t.Errorf("kafka-broker-api-versions: API %d: %q, ApiVersions says %q", key, rest, want)
		}
	}
	for key := range served {
		if _, ok := shown[key]; !ok {
			if _, known := client[key]; known {
				t.Errorf("kafka-broker-api-versions does not show served API %d", key)
			}
		}
	}

	// Served below the 4.4 client's latest on purpose: the highest version
	// each may stay at, and why.
	allowed := map[int16]struct {
		max    int16
		reason string
	}{
		// InitProducerId v6 adds KIP-939's two-phase commit (Enable2Pc,
		// KeepPreparedTxn). The Java producer sends whatever the broker
		// advertises, so v5 is what it gets, losing nothing unless
		// transaction.two.phase.commit.enable=true, which then fails at
		// the client (Enable2Pc cannot be written at v5): the gateway does
		// not do two-phase commit.
		22: {5, "v6 = two-phase commit (KIP-939), not served"},
		// AddPartitionsToTxn: the Java producer never sends above v3
		// (AddPartitionsToTxnRequest.Builder.forClient); v4 and v5 are the
		// brokers' batched verification (KIP-890 part 1) and, under
		// transaction protocol 2, the producer adds partitions through
		// Produce instead.
		24: {4, "the producer sends v3 at most; v5 = broker-to-broker TRANSACTION_ABORTABLE (KIP-890)"},
		// EndTxn v5 bumps the epoch on every transaction (KIP-890 part 2):
		// EndTxnRequest.Builder caps at v4 unless transaction.version >= 2.
		26: {4, "v5 = transaction protocol 2 (KIP-890)"},
		// TxnOffsetCommit v5 is v4 under transaction protocol 2 and v6 names
		// topics by ID (KIP-1319); TxnOffsetCommitRequest.Builder caps at
		// v4 unless transaction.version >= 2.
		28: {4, "v5 = transaction protocol 2 (KIP-890); v6 = topic IDs (KIP-1319), only under protocol 2"},
	}
	var table strings.Builder
	fmt.Fprintf(&table, "%-4s %-28s %-14s %-12s %s\n", "key", "api", "client latest", "lakegw max", "")
	keys := make([]int16, 0, len(client))
	for k := range client {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var lagging []string
	for _, key := range keys {
		c := client[key]
		k, ok := served[key]
		if !ok {
			continue
		}
		note := ""
		if c.latest > k.MaxVersion {
			if a, ok := allowed[key]; ok && a.max == k.MaxVersion {
				note = "allowed: " + a.reason
			} else {
				note = "LAGS"
				lagging = append(lagging, fmt.Sprintf("%s (%d): client %d, lakegw %d", c.name, key, c.latest, k.MaxVersion))
			}
		}
		fmt.Fprintf(&table, "%-4d %-28s %-14d %-12d %s\n", key, c.name, c.latest, k.MaxVersion, note)
	}
	t.Logf("API versions, the Kafka 4.4.0 client's latest against lakegw's:\n%s", table.String())
	for key, a := range allowed {
		if k, ok := served[key]; ok && k.MaxVersion > a.max {
			t.Errorf("API %d: lakegw now serves v%d, above the allowlist's %d: drop or update its entry", key, k.MaxVersion, a.max)
		}
	}
	if len(lagging) > 0 {
		t.Errorf("lakegw serves these APIs below the Kafka 4.4.0 client's latest version (serve it, or allowlist it with the reason):\n  %s",
			strings.Join(lagging, "\n  "))
	}
}

type clientAPI struct {
	name   string
	latest int16
}

// clientLatestVersions runs ClientApiVersions.java: every API the Kafka
// client jar can send, with its latest version.
func clientLatestVersions(t *testing.T, g *gateway) map[int16]clientAPI {
	t.Helper()
	r := mustKafkaTool(t, g, "", "client-api-versions")
	out := map[int16]clientAPI{}
	for _, line := range nonEmptyLines(r.stdout) {
		// id name oldest latest
		f := strings.Fields(line)
		if len(f) != 4 {
			t.Fatalf("client-api-versions: line %q", line)
		}
		id, err1 := strconv.Atoi(f[0])
		latest, err2 := strconv.Atoi(f[3])
		if err := errors.Join(err1, err2); err != nil {
			t.Fatalf("client-api-versions: line %q: %v", line, err)
		}
		out[int16(id)] = clientAPI{name: f[1], latest: int16(latest)}
	}
	if len(out) == 0 {
		t.Fatalf("client-api-versions printed nothing\n%s", r)
	}
	return out
}
