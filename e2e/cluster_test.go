package e2e

import (
	"context"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lakegw/lakegw/internal/pgtest"
	"github.com/lakegw/lakegw/lake"
)

// clusterPartitions spreads the test topic so every gateway leads some.
const clusterPartitions = "6"

// sharedCatalogArgs points gateways at the catalog and warehouse of dir
// (a SQL catalog on one SQLite file: gateways on one machine can share it).
func sharedCatalogArgs(t *testing.T, dir string) []string {
	t.Helper()
	props, err := lake.EmbeddedProps(dir)
	if err != nil {
		t.Fatal(err)
	}
	var args []string
	for k, v := range props {
		args = append(args, "--catalog-prop", k+"="+v)
	}
	return args
}

// startClusterGateway starts gateway node id of a cluster on the shared
// state store url.
func startClusterGateway(t *testing.T, id int, url string, catalogArgs []string, addr string) *gateway {
	t.Helper()
	args := append([]string{"--cluster", "--node-id", fmt.Sprint(id), "--state", url, "--partitions", clusterPartitions,
		"--cluster-heartbeat-interval", "250ms", "--cluster-lease", "2s"}, catalogArgs...)
	return startGateway(t, t.TempDir(), addr, args...)
}

// startCluster starts three gateways sharing the state store url.
func startCluster(t *testing.T, url string, catalogArgs []string) ([]*gateway, []string) {
	t.Helper()
	gws := make([]*gateway, 3)
	addrs := make([]string, 3)
	for i := range gws {
		gws[i] = startClusterGateway(t, i, url, catalogArgs, "")
		addrs[i] = gws[i].addr
	}
	return gws, addrs
}

// startWritableCluster starts three gateways on a fresh PostgreSQL and
// shared catalog, committing produced records every 20ms.
func startWritableCluster(t *testing.T) ([]*gateway, []string) {
	t.Helper()
	url := pgtest.Start(t).NewDatabase(t)
	shared := t.TempDir()
	setupTable(t, shared) // creates the catalog
	return startCluster(t, url, append(sharedCatalogArgs(t, shared), "--commit-interval", "20ms"))
}

// metadataOf asks one gateway (not the cluster) for the topic's metadata.
func metadataOf(ctx context.Context, t *testing.T, addr string) *kmsg.MetadataResponse {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addr))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrMetadataRequest()
	rt := kmsg.NewMetadataRequestTopic()
	rt.Topic = kmsg.StringPtr(topic)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl.SeedBrokers()[0])
	if err != nil {
		t.Fatalf("metadata from %s: %v", addr, err)
	}
	return resp
}

// leaders is the topic's partition -> leader node id, and the broker ids.
func leaders(t *testing.T, resp *kmsg.MetadataResponse) (map[int32]int32, []int32) {
	t.Helper()
	var brokers []int32
	for _, b := range resp.Brokers {
		brokers = append(brokers, b.NodeID)
	}
	sort.Slice(brokers, func(i, j int) bool { return brokers[i] < brokers[j] })
	out := map[int32]int32{}
	for _, tp := range resp.Topics {
		if tp.ErrorCode != 0 {
			t.Fatalf("metadata of %s: error %d", topic, tp.ErrorCode)
		}
		for _, p := range tp.Partitions {
			out[p.Partition] = p.Leader
		}
	}
	return out, brokers
}

// readAllAssigned reads every partition from the start through the seed
// addrs and returns partition/offset -> value.
func readAllAssigned(ctx context.Context, t *testing.T, seeds []string, parts int32, total int) map[string]string {
	t.Helper()
	assign := map[int32]kgo.Offset{}
	for p := range parts {
		assign[p] = kgo.NewOffset().AtStart()
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: assign}))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	out := map[string]string{}
	for len(out) < total {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			t.Fatalf("read %d of %d records", len(out), total)
		}
		fs.EachError(func(topic string, p int32, err error) { t.Logf("fetch %s/%d: %v (retried)", topic, p, err) })
		fs.EachRecord(func(r *kgo.Record) { out[fmt.Sprintf("%d/%d", r.Partition, r.Offset)] = string(r.Value) })
	}
	return out
}

// Three gateways on one PostgreSQL state store and one catalog share the
// work as Kafka brokers do: every one lists the three and names the same
// leader for each partition, leadership is spread, a consumer group with
// members on different gateways reads every record, a gateway killed with
// -9 drops out within the lease and its partitions and groups move, and the
// group resumes at its committed offsets. The records served are those a
// lone gateway serves from the same tables (the oracle), offset for offset.
func TestGatewaysShareTheWork(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	url := pgtest.Start(t).NewDatabase(t)
	shared := t.TempDir()
	w := setupTable(t, shared)
	catArgs := sharedCatalogArgs(t, shared)

	gws, addrs := startCluster(t, url, catArgs)
	// Every gateway sees the three and agrees on the leaders.
	var want map[int32]int32
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; i < len(addrs); {
		got, brokers := leaders(t, metadataOf(ctx, t, addrs[i]))
		if len(brokers) != 3 || (want != nil && fmt.Sprint(got) != fmt.Sprint(want)) {
			if time.Now().After(deadline) {
				t.Fatalf("gateway %d: brokers %v, leaders %v; want 3 brokers and leaders %v", i, brokers, got, want)
			}
			time.Sleep(100 * time.Millisecond)
			continue
		}
		want = got
		i++
	}
	spread := map[int32]bool{}
	for _, l := range want {
		spread[l] = true
	}
	if len(spread) < 2 {
		t.Fatalf("leaders %v: every partition on one gateway", want)
	}
	t.Logf("leaders: %v", want)

	// The oracle: a lone gateway on the same catalog, its own state.
	lone := startGateway(t, t.TempDir(), "", append([]string{"--partitions", clusterPartitions}, catArgs...)...)
	total := len(w.allRows())
	oracle := readAllAssigned(ctx, t, []string{lone.addr}, 6, total)
	if got := readAllAssigned(ctx, t, addrs, 6, total); fmt.Sprint(got) != fmt.Sprint(oracle) {
		t.Fatalf("the cluster serves other records than a lone gateway (%d vs %d)", len(got), len(oracle))
	}
	lone.stop()

	// A group with a member on each of two gateways.
	const group = "cluster-group"
	var mu sync.Mutex
	seen := map[string]string{}
	member := func(seed string) *kgo.Client {
		cl, err := kgo.NewClient(kgo.SeedBrokers(seed), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.AutoCommitInterval(200*time.Millisecond),
			kgo.FetchMaxBytes(32<<10))
		if err != nil {
			t.Fatal(err)
		}
		return cl
	}
	members := []*kgo.Client{member(addrs[0]), member(addrs[1])}
	var wg sync.WaitGroup
	runCtx, stopMembers := context.WithCancel(ctx)
	for _, cl := range members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for runCtx.Err() == nil {
				fs := cl.PollFetches(runCtx)
				fs.EachError(func(topic string, p int32, err error) {
					if runCtx.Err() == nil {
						t.Logf("group member: fetch %s/%d: %v", topic, p, err)
					}
				})
				fs.EachRecord(func(r *kgo.Record) {
					mu.Lock()
					seen[fmt.Sprintf("%d/%d", r.Partition, r.Offset)] = string(r.Value)
					mu.Unlock()
				})
			}
		}()
	}
	defer func() {
		stopMembers()
		wg.Wait()
		for _, cl := range members {
			cl.Close()
		}
	}()
	waitSeen := func(n int, what string) {
		t.Helper()
		for {
			mu.Lock()
			got := len(seen)
			mu.Unlock()
			if got >= n {
				return
			}
			if ctx.Err() != nil {
				for i, g := range gws {
					t.Logf("gateway %d:\n%s", i, tailLines(grepLines(g.Logs(), `"level":"(warn|error)"|group|cluster`), 30))
				}
				t.Fatalf("%s: the group read %d of %d records", what, got, n)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitSeen(total/3, "before the kill")

	// Kill the group's coordinator (franz-go's view of it).
	adm := kadm.NewClient(mustClient(t, addrs[2]))
	described, err := adm.DescribeGroups(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	victim := described[group].Coordinator.NodeID
	t.Logf("killing node %d, the group's coordinator", victim)
	gws[victim].kill9()
	survivors := []string{}
	for i, a := range addrs {
		if int32(i) != victim {
			survivors = append(survivors, a)
		}
	}
	// It drops out of every survivor's Metadata within the lease.
	deadline = time.Now().Add(10 * time.Second)
	for _, a := range survivors {
		for {
			_, brokers := leaders(t, metadataOf(ctx, t, a))
			if len(brokers) == 2 && !strings.Contains(fmt.Sprint(brokers), fmt.Sprint(victim)) {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("gateway %s still lists %v", a, brokers)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	// The group carries on: everything read, then committed everywhere.
	more := w.appendRows(300)
	total += len(more.Rows)
	waitSeen(total, "after the kill")
	for p := range int32(6) {
		for _, a := range survivors {
			if got, _ := leaders(t, metadataOf(ctx, t, a)); got[p] == victim {
				t.Fatalf("partition %d still led by the dead node %d", p, victim)
			}
		}
	}
	adm = kadm.NewClient(mustClient(t, survivors[0]))
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(20 * time.Second)
	for {
		offs, err := adm.FetchOffsets(ctx, group)
		done := err == nil
		ends.Each(func(e kadm.ListedOffset) {
			if o, ok := offs.Lookup(topic, e.Partition); !ok || o.At != e.Offset {
				done = false
			}
		})
		if done {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("committed offsets %v never reached the end offsets %v (%v)", offs, ends, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// What the group read is what a lone gateway serves now.
	lone = startGateway(t, t.TempDir(), "", append([]string{"--partitions", clusterPartitions}, catArgs...)...)
	oracle = readAllAssigned(ctx, t, []string{lone.addr}, 6, total)
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(seen) != fmt.Sprint(oracle) {
		t.Fatalf("the group read %d records, other than the %d a lone gateway serves", len(seen), len(oracle))
	}
}

// Two gateways cannot share a node id, nor serve with other topic
// defaults: the second is refused at start.
func TestClusterRefusesADuplicateNodeIDOrOtherDefaults(t *testing.T) {
	url := pgtest.Start(t).NewDatabase(t)
	shared := t.TempDir()
	setupTable(t, shared)
	catArgs := sharedCatalogArgs(t, shared)
	startClusterGateway(t, 1, url, catArgs, "")
	out, err := runLakegw(t, 60*time.Second, append([]string{"serve", "--data-dir", t.TempDir(), "--listen", freeAddr(t),
		"--cluster", "--node-id", "1", "--state", url}, catArgs...)...)
	if err == nil || !strings.Contains(out, "another live gateway has this node id") {
		t.Fatalf("a second node 1: %v\n%s", err, out)
	}
	// Nor other topic defaults: the gateways would serve other offsets.
	out, err = runLakegw(t, 60*time.Second, append([]string{"serve", "--data-dir", t.TempDir(), "--listen", freeAddr(t),
		"--cluster", "--node-id", "2", "--state", url, "--partitions", "2"}, catArgs...)...)
	if err == nil || !strings.Contains(out, "another live gateway runs with other topic defaults") {
		t.Fatalf("a node with --partitions 2 beside --partitions %s: %v\n%s", clusterPartitions, err, out)
	}
}

// grepLines keeps the lines of s matching re.
func grepLines(s, re string) string {
	rx := regexp.MustCompile(re)
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if rx.MatchString(l) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// An idempotent producer writes through the cluster while the gateway
// leading its table is killed with -9: the table's leadership moves, the
// producer carries on at the new leader, and every acknowledged record is
// in the topic exactly once (a lakegw-written table has one leader for all
// its partitions, whose writer restores the producers' state from the
// table when it takes over).
func TestClusterProduceAcrossKill9(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	gws, addrs := startWritableCluster(t)
	const produced, n = "e2e.produced", 3000
	adm := kadm.NewClient(mustClient(t, addrs[0]))
	if resp, err := adm.CreateTopics(ctx, 3, 1, nil, produced); err != nil || resp[produced].Err != nil {
		t.Fatalf("create %s: %v %v", produced, err, resp[produced].Err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.DefaultProduceTopic(produced), kgo.ProducerLinger(5*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var leader int32 = -1
	for i := 0; i < n; i += 100 {
		if i == n/3 {
			// Kill the gateway leading the table, mid-stream.
			md, err := adm.Metadata(ctx, produced)
			if err != nil {
				t.Fatal(err)
			}
			leader = md.Topics[produced].Partitions[0].Leader
			t.Logf("killing node %d, the table's leader", leader)
			gws[leader].kill9()
		}
		var recs []*kgo.Record
		for j := i; j < i+100; j++ {
			recs = append(recs, &kgo.Record{Key: []byte(fmt.Sprint(j)), Value: []byte(fmt.Sprintf("p-%d", j))})
		}
		if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce %d..%d: %v", i, i+99, err)
		}
	}
	var survivor string
	for i, a := range addrs {
		if int32(i) != leader {
			survivor = a
		}
	}
	seen := map[string]int{}
	for _, r := range readValues(ctx, t, survivor, produced, n, false) {
		seen[string(r.Value)]++
	}
	for i := range n {
		if v := fmt.Sprintf("p-%d", i); seen[v] != 1 {
			t.Fatalf("%s is in the topic %d times, want once (%d distinct values)", v, seen[v], len(seen))
		}
	}
	// Nothing more than the n records either.
	ends, err := kadm.NewClient(mustClient(t, survivor)).ListEndOffsets(ctx, produced)
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	ends.Each(func(o kadm.ListedOffset) { total += o.Offset })
	if total != n {
		t.Fatalf("the topic holds %d records, want %d", total, n)
	}
}

// The Java client (4.x) with its group's members on different gateways of
// a cluster, with the classic protocol and with KIP-848: each member finds
// the group's coordinator and the partitions' leaders among the gateways,
// a member leaving hands its partitions over, and every record is consumed
// exactly once (e2e/flink's JavaConsumerProtocolTest.groupAcrossGateways).
func TestJavaGroupAcrossGateways(t *testing.T) {
	needJava(t)
	gws, addrs := startWritableCluster(t)
	logs := func() string {
		var b strings.Builder
		for i, g := range gws {
			fmt.Fprintf(&b, "gateway %d:\n%s\n", i, tailLines(g.Logs(), 25))
		}
		return b.String()
	}
	runJavaTests(t, []string{"-Dtest=JavaConsumerProtocolTest#groupAcrossGateways",
		"-Dlakegw.bootstrap=" + strings.Join(addrs, ","), "-Dlakegw.cluster=" + strings.Join(addrs, ",")},
		logs, func(took time.Duration) { t.Logf("mvn test took %v", took.Round(time.Second)) })
}
