package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Producers of other client families write a raw topic, and franz-go
// reads back what each acknowledged: record i is key "k<i>", value
// "v<i>", header n=<i>, timestamp ts0+i at the partition and offset the
// producer was told.

// createRawTopic creates a raw topic through CreateTopics.
func createRawTopic(t *testing.T, addr, topic string, partitions int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	adm := kadm.NewClient(mustClient(t, addr))
	if resp, err := adm.CreateTopics(ctx, partitions, 1, nil, topic); err != nil || resp[topic].Err != nil {
		t.Fatalf("create topic %s: %v %v", topic, err, resp[topic].Err)
	}
}

// ackedRecord is one record a client's producer says was written.
type ackedRecord struct {
	I         int   `json:"i"`
	Partition int32 `json:"partition"`
	Offset    int64 `json:"offset"`
}

// checkProduced reads the topic back and compares every acknowledged
// record; withTimestamps also compares timestamps (kcat sets its own).
func checkProduced(t *testing.T, addr, topic string, acked []ackedRecord, ts0 int64, withTimestamps bool) {
	t.Helper()
	cons, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	got := map[[2]int64]*kgo.Record{}
	for len(got) < len(acked) {
		fs := cons.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("read back after %d of %d records: %v", len(got), len(acked), err)
		}
		fs.EachRecord(func(r *kgo.Record) { got[[2]int64{int64(r.Partition), r.Offset}] = r })
	}
	if len(got) != len(acked) {
		t.Fatalf("topic holds %d records, %d were acknowledged", len(got), len(acked))
	}
	for _, a := range acked {
		r := got[[2]int64{int64(a.Partition), a.Offset}]
		if r == nil {
			t.Fatalf("record %d acknowledged at partition %d offset %d is not there", a.I, a.Partition, a.Offset)
		}
		if string(r.Key) != fmt.Sprintf("k%d", a.I) || string(r.Value) != fmt.Sprintf("v%d", a.I) || len(r.Headers) != 1 ||
			r.Headers[0].Key != "n" || string(r.Headers[0].Value) != strconv.Itoa(a.I) {
			t.Fatalf("record %d at %d/%d: key %q value %q headers %v", a.I, a.Partition, a.Offset, r.Key, r.Value, r.Headers)
		}
		if withTimestamps && r.Timestamp.UnixMilli() != ts0+int64(a.I) {
			t.Fatalf("record %d: timestamp %d, produced %d", a.I, r.Timestamp.UnixMilli(), ts0+int64(a.I))
		}
	}
}

func parseAcked(t *testing.T, out []byte) []ackedRecord {
	t.Helper()
	var acked []ackedRecord
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var a ackedRecord
		if err := json.Unmarshal([]byte(line), &a); err != nil {
			t.Fatalf("bad producer output line %q: %v", line, err)
		}
		acked = append(acked, a)
	}
	return acked
}

func testPythonProducer(t *testing.T, module, pipName, client string) {
	py := requirePython(t, module, pipName)
	g := startGateway(t, t.TempDir(), "", "--commit-interval", "50ms")
	for _, codec := range []string{"none", "gzip", "snappy", "lz4", "zstd"} {
		if client == "kafka-python" && (codec == "snappy" || codec == "zstd" || codec == "lz4") {
			continue // optional codec modules kafka-python does not bring
		}
		t.Run(codec, func(t *testing.T) {
			topic := strings.ReplaceAll(client, "-", "_") + "_" + codec
			createRawTopic(t, g.addr, topic, 3)
			out := runClient(t, g, py, filepath.Join("clients", "produce.py"), "--client", client, "--bootstrap", g.addr,
				"--topic", topic, "--count", "500", "--partitions", "3", "--compression", codec)
			acked := parseAcked(t, out)
			if len(acked) != 500 {
				t.Fatalf("%d of 500 records acknowledged", len(acked))
			}
			checkProduced(t, g.addr, topic, acked, 1_700_000_000_000, true)
		})
	}
}

func TestPythonConfluentKafkaProduces(t *testing.T) {
	testPythonProducer(t, "confluent_kafka", "confluent-kafka", "confluent")
}

func TestPythonKafkaPythonProduces(t *testing.T) {
	testPythonProducer(t, "kafka", "kafka-python", "kafka-python")
}

// kcat -P (librdkafka's producer with its defaults) writes lines of
// key:value with a header; kcat -C reads them back.
func TestKcatProduces(t *testing.T) {
	kcat := requireKcat(t)
	g := startGateway(t, t.TempDir(), "", "--commit-interval", "50ms")
	const topic = "kcat_in"
	createRawTopic(t, g.addr, topic, 1)
	var lines strings.Builder
	for i := range 200 {
		fmt.Fprintf(&lines, "k%d:v%d\n", i, i)
	}
	stdout, stderr, err := runClientStdin(t, lines.String(), kcat, "-b", g.addr, "-P", "-t", topic, "-p", "0", "-K", ":", "-H", "n=kcat")
	if err != nil {
		t.Fatalf("kcat -P: %v\n%s\n%s", err, stdout, stderr)
	}
	out := runClient(t, g, kcat, "-b", g.addr, "-C", "-t", topic, "-e", "-f", "%o %k %s %h\n")
	got := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(got) != 200 {
		t.Fatalf("kcat -C read %d records, want 200:\n%s", len(got), out)
	}
	for i, line := range got {
		if want := fmt.Sprintf("%d k%d v%d n=kcat", i, i, i); line != want {
			t.Fatalf("record %d: %q, want %q", i, line, want)
		}
	}
}
