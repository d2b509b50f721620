package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Tests with kcat (librdkafka) against the built gateway. kcat and the
// Python clients are not Go dependencies: when one is missing the test is
// skipped, unless CI=true (CI installs them: scripts/install-test-deps.sh),
// where a missing client is a failure.

// clientTimeout bounds every client process a test runs.
const clientTimeout = 20 * time.Second

// missingTool skips the test, or fails it on CI, because a client is not
// installed.
func missingTool(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		t.Fatalf("%s (CI=true: the e2e clients must be installed; see scripts/install-test-deps.sh)", msg)
	}
	t.Skipf("%s; skipping (install with scripts/install-test-deps.sh; with CI=true this fails)", msg)
}

// requireKcat returns kcat's path, or skips/fails when it is not installed.
func requireKcat(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"kcat", "kafkacat"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	missingTool(t, "kcat (librdkafka) is not installed: apt-get install -y kcat")
	return ""
}

// runClient runs a client process with a deadline and returns its stdout;
// a non-zero exit, the deadline, or an error logged by librdkafka (log
// level 0-3, "%3|...", which it logs and retries past: a protocol parse
// failure is one) fails the test with the process's stderr and the
// gateway's logs. (kcat's -q also silences librdkafka's log: never pass
// it, or protocol errors go unseen.)
func runClient(t *testing.T, g *gateway, name string, args ...string) []byte {
	t.Helper()
	stdout, stderr, err := runClientErr(t, name, args...)
	if err == nil {
		if m := librdkafkaError.Find(stderr); m != nil {
			err = fmt.Errorf("librdkafka logged an error: %s", m)
		}
	}
	if err != nil {
		t.Fatalf("%s %s: %v\nstderr:\n%s\nstdout (tail):\n%s\ngateway logs (tail):\n%s", name, strings.Join(args, " "), err,
			tail(string(stderr), 8000), tail(string(stdout), 2000), tail(g.Logs(), 4000))
	}
	return stdout
}

// librdkafkaError matches a librdkafka log line of level emerg..error, or
// kcat's own error line.
var librdkafkaError = regexp.MustCompile(`(?m)^(%[0-3]\|.*|% ERROR.*)$`)

func runClientErr(t *testing.T, name string, args ...string) (stdout, stderr []byte, err error) {
	t.Helper()
	return runClientStdin(t, "", name, args...)
}

// runClientStdin is runClientErr with stdin fed to the process.
func runClientStdin(t *testing.T, stdin, name string, args ...string) (stdout, stderr []byte, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), clientTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.WaitDelay = 2 * time.Second
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err = cmd.Run()
	if ctx.Err() != nil {
		err = fmt.Errorf("timed out after %v: %w", clientTimeout, err)
	}
	t.Logf("%s ran %v", name, time.Since(start).Round(time.Millisecond))
	return out.Bytes(), errb.Bytes(), err
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// clientRecord is one consumed record as the non-Go clients print it: kcat
// -J and the scripts in clients/ share these field names where they can.
type clientRecord struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Offset    int64  `json:"offset"`
	// kcat -J: "ts"; the Python scripts: "timestamp". Milliseconds.
	Ts        *int64 `json:"ts"`
	Timestamp *int64 `json:"timestamp"`
	// kcat -J: "payload"; the Python scripts: "value".
	Key     *string `json:"key"`
	Payload *string `json:"payload"`
	Value   *string `json:"value"`
	// kcat -J prints headers as a flat [k1, v1, k2, v2, ...] array; the
	// Python scripts print [[k1, v1], [k2, v2], ...].
	Headers json.RawMessage `json:"headers"`
}

func (c clientRecord) record(t *testing.T) *kgo.Record {
	t.Helper()
	r := &kgo.Record{Topic: c.Topic, Partition: c.Partition, Offset: c.Offset}
	switch {
	case c.Ts != nil:
		r.Timestamp = time.UnixMilli(*c.Ts)
	case c.Timestamp != nil:
		r.Timestamp = time.UnixMilli(*c.Timestamp)
	default:
		t.Fatalf("offset %d: no timestamp", c.Offset)
	}
	if c.Key != nil {
		r.Key = []byte(*c.Key)
	}
	switch {
	case c.Payload != nil:
		r.Value = []byte(*c.Payload)
	case c.Value != nil:
		r.Value = []byte(*c.Value)
	}
	if len(c.Headers) > 0 && string(c.Headers) != "null" {
		var flat []*string
		var pairs [][]*string
		if err := json.Unmarshal(c.Headers, &pairs); err == nil {
			for _, p := range pairs {
				if len(p) != 2 || p[0] == nil {
					t.Fatalf("offset %d: bad header %s", c.Offset, c.Headers)
				}
				flat = append(flat, p[0], p[1])
			}
		} else if err := json.Unmarshal(c.Headers, &flat); err != nil || len(flat)%2 != 0 {
			t.Fatalf("offset %d: bad headers %s", c.Offset, c.Headers)
		}
		for i := 0; i < len(flat); i += 2 {
			h := kgo.RecordHeader{Key: *flat[i]}
			if flat[i+1] != nil {
				h.Value = []byte(*flat[i+1])
			}
			r.Headers = append(r.Headers, h)
		}
	}
	return r
}

// parseRecords reads one JSON object per line; lines that are not JSON
// objects (a client's chatter) fail the test.
func parseRecords(t *testing.T, out []byte) []*kgo.Record {
	t.Helper()
	var recs []*kgo.Record
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var c clientRecord
		if err := json.Unmarshal(line, &c); err != nil {
			t.Fatalf("client printed a line that is not a record: %v: %s", err, line)
		}
		r := c.record(t)
		if r.Partition != 0 || (r.Topic != "" && r.Topic != topic) {
			t.Fatalf("offset %d: topic %q partition %d, want %s/0", r.Offset, r.Topic, r.Partition, topic)
		}
		recs = append(recs, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return recs
}

// committedOffset is the group's committed offset of partition 0, or -1.
func committedOffset(t *testing.T, addr, group string) int64 {
	t.Helper()
	adm := kadm.NewClient(mustClient(t, addr))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	offs, err := adm.FetchOffsets(ctx, group)
	if err != nil {
		t.Fatalf("fetch offsets of %s: %v", group, err)
	}
	o, ok := offs.Lookup(topic, 0)
	if !ok {
		return -1
	}
	if o.Err != nil {
		t.Fatalf("fetch offsets of %s: %v", group, o.Err)
	}
	return o.At
}

func TestKcatMetadataListsBrokerAndTopic(t *testing.T) {
	kcat := requireKcat(t)
	dir := t.TempDir()
	setupTable(t, dir)
	g := startGateway(t, dir, "")
	out := runClient(t, g, kcat, "-b", g.addr, "-L", "-J", "-m", "10")
	var md struct {
		Brokers []struct {
			ID   int32  `json:"id"`
			Name string `json:"name"`
		} `json:"brokers"`
		Topics []struct {
			Topic      string `json:"topic"`
			Err        string `json:"error"`
			Partitions []struct {
				Partition int32  `json:"partition"`
				Leader    int32  `json:"leader"`
				Err       string `json:"error"`
			} `json:"partitions"`
		} `json:"topics"`
	}
	if err := json.Unmarshal(out, &md); err != nil {
		t.Fatalf("kcat -L -J output is not JSON: %v\n%s", err, out)
	}
	if len(md.Brokers) != 1 || md.Brokers[0].Name != g.addr {
		t.Fatalf("brokers %+v, want one at %s", md.Brokers, g.addr)
	}
	found := false
	for _, tp := range md.Topics {
		if tp.Topic != topic {
			continue
		}
		found = true
		if tp.Err != "" {
			t.Fatalf("topic %s has error %q", topic, tp.Err)
		}
		if len(tp.Partitions) != 1 || tp.Partitions[0].Partition != 0 || tp.Partitions[0].Leader != md.Brokers[0].ID || tp.Partitions[0].Err != "" {
			t.Fatalf("topic %s partitions %+v, want partition 0 led by broker %d", topic, tp.Partitions, md.Brokers[0].ID)
		}
	}
	if !found {
		t.Fatalf("kcat -L does not list %s:\n%s", topic, out)
	}
}

// batchCodec is the compression codec of the first batch a Fetch of the
// given version returns at offset 0, to be sure what librdkafka decoded.
func batchCodec(t *testing.T, addr string, version int16) int16 {
	t.Helper()
	p := rawFetch(t, mustClient(t, addr), topic, 0, version)
	if p.ErrorCode != 0 {
		t.Fatalf("fetch: %v", kerr.ErrorForCode(p.ErrorCode))
	}
	var b kmsg.RecordBatch
	if err := b.ReadFrom(p.RecordBatches); err != nil {
		t.Fatalf("first batch: %v", err)
	}
	return b.Attributes & 0x07
}

func TestKcatReadsEveryRecordOnce(t *testing.T) {
	kcat := requireKcat(t)
	dir := t.TempDir()
	w := setupTable(t, dir)
	// librdkafka 2.x fetches with v11 (zstd needs v10+).
	codecs := []struct {
		name string
		id   int16
	}{{"none", 0}, {"gzip", 1}, {"snappy", 2}, {"lz4", 3}, {"zstd", 4}}
	for _, c := range codecs {
		ok := t.Run(c.name, func(t *testing.T) {
			g := startGateway(t, dir, "", "--compression", c.name)
			defer g.stop()
			if got := batchCodec(t, g.addr, 11); got != c.id {
				t.Fatalf("gateway sends codec %d at Fetch v11, want %d (%s)", got, c.id, c.name)
			}
			// -e: exit at the end of the partition; -J: one JSON object
			// per record with offset, key, headers, ts and payload.
			out := runClient(t, g, kcat, "-b", g.addr, "-C", "-t", topic, "-p", "0", "-o", "beginning", "-e", "-J",
				"-X", "fetch.message.max.bytes=65536") // several fetches per snapshot
			checkRecords(t, w, parseRecords(t, out))
		})
		if !ok {
			break // one client timeout is enough to show it
		}
	}
}

func TestKcatGroupConsumerCommits(t *testing.T) {
	kcat := requireKcat(t)
	dir := t.TempDir()
	w := setupTable(t, dir)
	g := startGateway(t, dir, "")
	group := "kcat-group"
	n := int64(len(w.allRows()))
	// Balanced consumer (-G): join, sync, fetch, auto-commit; -e exits when
	// the assigned partition is at its end, and the consumer close commits
	// the final position before leaving the group.
	consume := func() []*kgo.Record {
		// No -o: with -G, kcat assigns every partition at -o's offset,
		// ignoring the committed one; auto.offset.reset covers a new group.
		out := runClient(t, g, kcat, "-b", g.addr, "-G", group, "-e", "-J",
			"-X", "auto.offset.reset=earliest",
			"-X", "enable.auto.commit=true", "-X", "auto.commit.interval.ms=100",
			"-X", "session.timeout.ms=6000", "-X", "heartbeat.interval.ms=500",
			topic)
		return parseRecords(t, out)
	}
	checkRecords(t, w, consume())
	if got := committedOffset(t, g.addr, group); got != n {
		t.Fatalf("committed offset after kcat -G: %d, want the end offset %d", got, n)
	}
	// A second member of the group resumes at the end: nothing to read.
	if recs := consume(); len(recs) != 0 {
		t.Fatalf("second kcat -G run read %d records (first at offset %d), want none", len(recs), recs[0].Offset)
	}
	if got := committedOffset(t, g.addr, group); got != n {
		t.Fatalf("committed offset after the second run: %d, want %d", got, n)
	}
}

func TestKcatQueryOffsetsByTimestamp(t *testing.T) {
	kcat := requireKcat(t)
	dir := t.TempDir()
	w := setupTable(t, dir)
	g := startGateway(t, dir, "")
	base := int64(0)
	for _, s := range w.Snaps {
		out := runClient(t, g, kcat, "-b", g.addr, "-Q", "-J", "-t", topic+":0:"+strconv.FormatInt(s.TimestampMs, 10))
		// {"e2e.events":{"topic":"e2e.events","0":{"partition":0,"offset":N}}}
		var res map[string]map[string]json.RawMessage
		if err := json.Unmarshal(out, &res); err != nil {
			t.Fatalf("kcat -Q -J output is not JSON: %v\n%s", err, out)
		}
		var p struct {
			Partition int32  `json:"partition"`
			Offset    *int64 `json:"offset"`
			Err       string `json:"error"`
		}
		raw, ok := res[topic]["0"]
		if !ok {
			t.Fatalf("kcat -Q answered no partition 0 of %s:\n%s", topic, out)
		}
		if err := json.Unmarshal(raw, &p); err != nil || p.Err != "" || p.Offset == nil {
			t.Fatalf("kcat -Q at %d: %s (%v)", s.TimestampMs, raw, err)
		}
		if *p.Offset != base {
			t.Fatalf("kcat -Q at %d (snapshot %d) = offset %d, want %d", s.TimestampMs, s.SnapshotID, *p.Offset, base)
		}
		base += int64(len(s.Rows))
	}
	// After the last commit: no such record, offset -1 as from Kafka.
	after := w.Snaps[len(w.Snaps)-1].TimestampMs + 60_000
	out := runClient(t, g, kcat, "-b", g.addr, "-Q", "-J", "-t", topic+":0:"+strconv.FormatInt(after, 10))
	if want := `"0":{"partition":0,"offset":-1}`; !bytes.Contains(out, []byte(want)) {
		t.Fatalf("kcat -Q after the last commit: %s, want %s", bytes.TrimSpace(out), want)
	}
}

func TestKcatWaitsAtEndAndGetsNewSnapshot(t *testing.T) {
	kcat := requireKcat(t)
	dir := t.TempDir()
	w := setupTable(t, dir)
	g := startGateway(t, dir, "")
	n := int64(len(w.allRows()))
	// kcat starts at the end and long-polls there (librdkafka's
	// fetch.wait.max.ms, 500 ms): several empty Fetch answers at the high
	// watermark before the new snapshot lands, then -c 1 exits.
	type result struct {
		stdout, stderr []byte
		err            error
	}
	done := make(chan result, 1)
	go func() {
		stdout, stderr, err := runClientErr(t, kcat, "-b", g.addr, "-C", "-t", topic, "-p", "0", "-o", "end", "-c", "1", "-J")
		done <- result{stdout, stderr, err}
	}()
	time.Sleep(2 * time.Second)
	s := w.appendRows(1)
	res := <-done
	if res.err == nil {
		if m := librdkafkaError.Find(res.stderr); m != nil {
			res.err = fmt.Errorf("librdkafka logged an error: %s", m)
		}
	}
	if res.err != nil {
		t.Fatalf("kcat at the end of the partition: %v\nstderr:\n%s\ngateway logs (tail):\n%s", res.err, tail(string(res.stderr), 8000), tail(g.Logs(), 4000))
	}
	recs := parseRecords(t, res.stdout)
	if len(recs) != 1 || recs[0].Offset != n || header(recs[0], "lakegw.snapshot-id") != strconv.FormatInt(s.SnapshotID, 10) {
		t.Fatalf("kcat at the end got %d records (%s), want offset %d of snapshot %d", len(recs), res.stdout, n, s.SnapshotID)
	}
}
