package e2e

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"

	"github.com/lakegw/lakegw/e2e/internal/procs"
)

const dremioOriginal = "/tmp/iceberg-test-tables/v2/multi_rowgroup_orders_with_deletes"

const (
	// hostileDamageFetches is how many times each damaged table is
	// fetched at its end (a client retrying KAFKA_STORAGE_ERROR).
	hostileDamageFetches = 50
	// hostileDamageRSS bounds the growth of the resident set while they
	// are: each retry of a damaged snapshot reads its files again, and
	// nothing of a failed read may stay.
	hostileDamageRSS = 48 << 20
)

// TestHostileDamagedFiles reproduces issue 12, rows 1 and 10, against the
// built binary. One served table has a data file with a changed byte in
// its footer (on main, arrow-go panicked in an iceberg-go scanner
// goroutine: "makeslice: cap out of range", and the process exited);
// another lost the manifest list of its last snapshot. The gateway must
// stay up, answer Fetch of both at their end with KAFKA_STORAGE_ERROR and
// log, once, an error naming the file; a third table still serves its
// records, and Metadata is answered within 1 s.
func TestHostileDamagedFiles(t *testing.T) {
	t.Parallel()
	root := fidFixturesRoot(t)
	fixture := filepath.Join(root, "dremio_multi_rowgroup_pos_deletes")
	dir := t.TempDir()

	// A: one byte of a data file's footer moved by one (found by
	// changelog's TestDeriveDamagedDataFileNeverPanics-style probing of
	// this file: it makes the schema's child count absurd).
	damagedData := filepath.Join(dir, "damaged-data")
	hostileCopyTree(t, fixture, damagedData)
	dataFile := filepath.Join(damagedData, "data", "2019", "2019-00.parquet")
	raw, err := os.ReadFile(dataFile)
	if err != nil {
		t.Fatal(err)
	}
	raw[len(raw)-1869]++
	if err := os.WriteFile(dataFile, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	fidRegister(t, dir, "hostile.damaged_data", fidLatestMetadata(t, damagedData), dremioOriginal+"="+damagedData)

	// B: the manifest list of the last snapshot removed.
	noList := filepath.Join(dir, "no-list")
	hostileCopyTree(t, fixture, noList)
	meta := fidLatestMetadata(t, noList)
	list := hostileCurrentManifestList(t, meta)
	if err := os.Remove(filepath.Join(noList, "metadata", list)); err != nil {
		t.Fatal(err)
	}
	fidRegister(t, dir, "hostile.no_list", meta, dremioOriginal+"="+noList)

	// C: a healthy table, in place.
	healthy := filepath.Join(root, "duckdb_equality_deletes/warehouse/mydb/mytable_partitioned")
	fidRegister(t, dir, "hostile.healthy", fidLatestMetadata(t, healthy),
		"data/persistent/equality_deletes/warehouse/mydb/mytable_partitioned="+healthy)

	g := startGatewayForRSS(t, dir, "")
	errA := hostileWaitIndexError(t, g, "hostile.damaged_data")
	if !strings.Contains(errA, "2019-00.parquet") {
		t.Errorf("the damaged table's error does not name the data file: %s", errA)
	}
	errB := hostileWaitIndexError(t, g, "hostile.no_list")
	if !strings.Contains(errB, list) {
		t.Errorf("the table without its manifest list has an error not naming it: %s", errB)
	}

	// The healthy table serves its records.
	recs, ends := fidConsume(t, g.addr, "hostile.healthy")
	n := 0
	for _, rs := range recs {
		n += len(rs)
	}
	if n == 0 {
		t.Errorf("the healthy table served no records (end offsets %v)", ends)
	}

	// The damaged ones say why nothing comes at their end, however often
	// they are asked while their snapshots are retried (with backoff),
	// and RSS stays within hostileDamageRSS of its level once the damage
	// is found.
	pid := g.cmd.Process.Pid
	rssBefore, _ := procs.MemStat(pid)
	procs.ResetHWM(pid)
	for round := range hostileDamageFetches {
		for _, topic := range []string{"hostile.damaged_data", "hostile.no_list"} {
			end := hostileEndOffset(t, g.addr, topic)
			if code := hostileFetchCode(t, g.addr, topic, end); code != kerr.KafkaStorageError.Code {
				t.Fatalf("%s: Fetch %d at its end %d answered %v, want KAFKA_STORAGE_ERROR", topic, round, end, kerr.ErrorForCode(code))
			}
		}
	}
	_, peak := procs.MemStat(pid)
	t.Logf("damaged tables: RSS %d MiB once found, peak %d MiB over %d fetches of each", rssBefore>>20, peak>>20, hostileDamageFetches)
	if peak > rssBefore+hostileDamageRSS {
		t.Errorf("RSS peaked at %d MiB, %d MiB over its level once the damage was found: want at most %d MiB over",
			peak>>20, (peak-rssBefore)>>20, hostileDamageRSS>>20)
	}

	// A healthy Metadata request is answered within 1 s.
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	_, err = kadm.NewClient(mustClient(t, g.addr)).Metadata(ctx)
	cancel()
	if err != nil {
		t.Errorf("Metadata not answered within 1 s: %v (after %v)", err, time.Since(start))
	}

	// Still up, and each damage logged once although every poll retries.
	time.Sleep(time.Second)
	select {
	case err := <-g.done:
		t.Fatalf("lakegw exited: %v\nlogs:\n%s", err, fidTail(g.Logs(), 40))
	default:
	}
	for _, topic := range []string{"hostile.damaged_data", "hostile.no_list"} {
		if n := hostileCountIndexErrors(g.Logs(), topic); n != 1 {
			t.Errorf("%s: %d index errors logged, want 1", topic, n)
		}
	}
}

// hostileCopyTree copies a fixture table into dst, writable.
func hostileCopyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		out := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(out, 0o700)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(out, b, 0o600)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// hostileCurrentManifestList returns the file name of the current
// snapshot's manifest list.
func hostileCurrentManifestList(t *testing.T, metaPath string) string {
	t.Helper()
	raw, err := os.ReadFile(metaPath)
	if err != nil {
		t.Fatal(err)
	}
	var meta struct {
		Current   json.Number `json:"current-snapshot-id"`
		Snapshots []struct {
			ID   json.Number `json:"snapshot-id"`
			List string      `json:"manifest-list"`
		} `json:"snapshots"`
	}
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber()
	if err := dec.Decode(&meta); err != nil {
		t.Fatal(err)
	}
	for _, s := range meta.Snapshots {
		if s.ID == meta.Current {
			return filepath.Base(s.List)
		}
	}
	t.Fatalf("no current snapshot in %s", metaPath)
	return ""
}

// hostileIndexErrors returns the errors the gateway logged for a topic
// whose indexing failed.
func hostileIndexErrors(logs, topic string) []string {
	var out []string
	for _, line := range strings.Split(logs, "\n") {
		var l struct {
			Topic   string `json:"topic"`
			Message string `json:"message"`
			Error   string `json:"error"`
		}
		if json.Unmarshal([]byte(line), &l) == nil && l.Topic == topic && l.Error != "" && strings.Contains(l.Message, "cannot index") {
			out = append(out, l.Error)
		}
	}
	return out
}

func hostileCountIndexErrors(logs, topic string) int { return len(hostileIndexErrors(logs, topic)) }

// hostileWaitIndexError waits for the topic's first index error.
func hostileWaitIndexError(t *testing.T, g *gateway, topic string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if errs := hostileIndexErrors(g.Logs(), topic); len(errs) > 0 {
			return errs[0]
		}
		select {
		case err := <-g.done:
			t.Fatalf("lakegw exited: %v\nlogs:\n%s", err, fidTail(g.Logs(), 40))
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: no index error logged within 30 s; logs:\n%s", topic, fidTail(g.Logs(), 40))
		}
	}
}

func hostileEndOffset(t *testing.T, addr, topic string) int64 {
	t.Helper()
	offs, err := kadm.NewClient(mustClient(t, addr)).ListEndOffsets(context.Background(), topic)
	if err != nil {
		t.Fatal(err)
	}
	o, ok := offs.Lookup(topic, 0)
	if !ok || o.Err != nil {
		t.Fatalf("%s: no end offset of partition 0: %v", topic, o.Err)
	}
	return o.Offset
}

// hostileFetchCode fetches partition 0 of a topic at offset and returns
// the partition's error code.
func hostileFetchCode(t *testing.T, addr, topic string, offset int64, opts ...kgo.Opt) int16 {
	t.Helper()
	// Fetch v12 names the topic by name (opts may pin it lower).
	v12 := kversion.Stable()
	v12.SetMaxKeyVersion(kmsg.Fetch.Int16(), 12)
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.MaxVersions(v12)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	req := kmsg.NewPtrFetchRequest()
	req.ReplicaID = -1
	req.MaxWaitMillis = 200
	req.MaxBytes = 1 << 20
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = topic
	rp := kmsg.NewFetchRequestTopicPartition()
	rp.FetchOffset = offset
	rp.PartitionMaxBytes = 1 << 20
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Topics) != 1 || len(resp.Topics[0].Partitions) != 1 {
		t.Fatalf("fetch response %+v", resp)
	}
	return resp.Topics[0].Partitions[0].ErrorCode
}
