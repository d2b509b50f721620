package e2e

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/kversion"
)

// Issue 18 ("every Kafka 4.x client and admin tool"): the APIs at the
// versions kafka-clients 4.4 sends, answered as a Kafka 4 broker answers
// them. One gateway serves every subtest: three tables (e2e.a, e2e.b,
// e2e.c) of three partitions each.

// pinned is a client whose versions of key are capped at version, so that
// it speaks exactly that version to the gateway (which serves more).
func pinned(t *testing.T, addr string, key, version int16, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	vs := kversion.Stable()
	vs.SetMaxKeyVersion(key, version)
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.MaxVersions(vs)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// topicIDs maps the gateway's topics to their ids, from Metadata.
func topicIDs(t *testing.T, cl *kgo.Client) map[string][16]byte {
	t.Helper()
	req := kmsg.NewPtrMetadataRequest()
	resp, err := req.RequestWith(context.Background(), cl)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][16]byte{}
	for _, mt := range resp.Topics {
		out[*mt.Topic] = mt.TopicID
	}
	return out
}

func TestKafka4APIs(t *testing.T) {
	dir := t.TempDir()
	writers := map[string]*tableWriter{}
	for _, name := range []string{"a", "b", "c"} {
		w := newTableWriter(t, dir, "e2e", name)
		w.appendRows(40)
		w.appendRows(25)
		writers["e2e."+name] = w
	}
	g := startGateway(t, dir, "", "--partitions", "3")
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	// Every table is served (and indexed) before the subtests look.
	for topic, w := range writers {
		waitEndOffsets(t, g.addr, topic, int64(len(w.allRows())))
	}

	t.Run("ListOffsetsV11TimeSpecs", func(t *testing.T) {
		// kgo sends a request at the highest version both sides speak:
		// one client per version pins it.
		clients := map[int16]*kgo.Client{}
		ask := func(version int16, specs ...int64) []kmsg.ListOffsetsResponseTopicPartition {
			t.Helper()
			cl := clients[version]
			if cl == nil {
				cl = pinned(t, g.addr, kmsg.ListOffsets.Int16(), version)
				clients[version] = cl
			}
			req := kmsg.NewPtrListOffsetsRequest()
			req.Version = version
			rt := kmsg.NewListOffsetsRequestTopic()
			rt.Topic = "e2e.a"
			for _, ts := range specs {
				rp := kmsg.NewListOffsetsRequestTopicPartition()
				rp.Partition, rp.Timestamp = 0, ts
				rt.Partitions = append(rt.Partitions, rp)
			}
			req.Topics = append(req.Topics, rt)
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Topics) != 1 {
				t.Fatalf("%d topics answered", len(resp.Topics))
			}
			return resp.Topics[0].Partitions
		}
		one := func(version int16, ts int64) kmsg.ListOffsetsResponseTopicPartition {
			t.Helper()
			ps := ask(version, ts)
			if len(ps) != 1 {
				t.Fatalf("v%d %d: %d partitions answered", version, ts, len(ps))
			}
			return ps[0]
		}
		earliest := one(11, -2)
		if earliest.ErrorCode != 0 || earliest.Offset != 0 {
			t.Fatalf("earliest: %+v", earliest)
		}
		// -4 earliest local: the log start, as Kafka answers it for a topic
		// without remote storage.
		if got := one(11, -4); got.ErrorCode != 0 || got.Offset != earliest.Offset || got.Timestamp != -1 || got.LeaderEpoch != earliest.LeaderEpoch {
			t.Fatalf("earliest local: %+v, want the log start %+v", got, earliest)
		}
		// -5 latest tiered and -6 earliest pending upload: nothing is
		// tiered, offset -1 and no error.
		for _, ts := range []int64{-5, -6} {
			if got := one(11, ts); got.ErrorCode != 0 || got.Offset != -1 || got.Timestamp != -1 || got.LeaderEpoch != -1 {
				t.Fatalf("timestamp %d: %+v, want offset, timestamp and epoch -1, no error", ts, got)
			}
		}
		// A spec below the version that brought it, or no spec at all, is
		// UNSUPPORTED_VERSION for its partition.
		for _, tc := range []struct {
			version int16
			ts      int64
		}{{10, -6}, {8, -5}, {7, -4}, {6, -3}, {11, -7}, {11, -100}} {
			if got := one(tc.version, tc.ts); got.ErrorCode != kerr.UnsupportedVersion.Code || got.Offset != -1 || got.LeaderEpoch != -1 {
				t.Fatalf("v%d timestamp %d: %+v, want UNSUPPORTED_VERSION", tc.version, tc.ts, got)
			}
		}
		// A partition named twice is answered once, INVALID_REQUEST.
		if ps := ask(11, -1, -2); len(ps) != 1 || ps[0].ErrorCode != kerr.InvalidRequest.Code {
			t.Fatalf("a partition named twice: %+v, want one INVALID_REQUEST", ps)
		}
		// v10's TimeoutMs changes nothing: the answer is immediate.
		req := kmsg.NewPtrListOffsetsRequest()
		req.Version, req.TimeoutMillis = 10, 1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = "e2e.a"
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Timestamp = -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		resp, err := req.RequestWith(ctx, pinned(t, g.addr, kmsg.ListOffsets.Int16(), 10))
		if err != nil || resp.Topics[0].Partitions[0].ErrorCode != 0 || resp.Topics[0].Partitions[0].Offset <= 0 {
			t.Fatalf("v10 latest: %v %+v", err, resp)
		}
	})

	t.Run("MetadataV13", func(t *testing.T) {
		cl := pinned(t, g.addr, kmsg.Metadata.Int16(), 13)
		req := kmsg.NewPtrMetadataRequest()
		req.Version = 13
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || resp.ErrorCode != 0 || len(resp.Topics) != 3 {
			t.Fatalf("Metadata v13: %v %+v", err, resp)
		}
		for _, mt := range resp.Topics {
			if mt.ErrorCode != 0 || len(mt.Partitions) != 3 || mt.TopicID == [16]byte{} {
				t.Fatalf("Metadata v13 topic %+v", mt)
			}
		}
	})

	t.Run("FetchV12ToV18ReadEveryRecord", func(t *testing.T) {
		for _, v := range []int16{12, 13, 15, 16, 17, 18} {
			t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
				w := writers["e2e.b"]
				cl := pinned(t, g.addr, kmsg.Fetch.Int16(), v, kgo.ConsumeTopics("e2e.b"),
					kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxBytes(8<<10))
				recs := consumeN(t, cl, len(w.allRows()), 30*time.Second)
				seen := map[string]bool{}
				for _, r := range recs {
					k := fmt.Sprintf("%d/%d", r.Partition, r.Offset)
					if seen[k] {
						t.Fatalf("record %s twice", k)
					}
					seen[k] = true
				}
			})
		}
	})

	t.Run("FetchByTopicID", func(t *testing.T) {
		cl := pinned(t, g.addr, kmsg.Fetch.Int16(), 18)
		ids := topicIDs(t, cl)
		cl13 := pinned(t, g.addr, kmsg.Fetch.Int16(), 13)
		fetch := func(version int16, sessionEpoch int32, ids ...[16]byte) *kmsg.FetchResponse {
			t.Helper()
			cl := cl
			if version == 13 {
				cl = cl13
			}
			req := kmsg.NewPtrFetchRequest()
			req.Version, req.MaxWaitMillis, req.MaxBytes, req.SessionEpoch = version, 10, 1<<20, sessionEpoch
			for _, id := range ids {
				rt := kmsg.NewFetchRequestTopic()
				rt.TopicID = id
				rp := kmsg.NewFetchRequestTopicPartition()
				rp.PartitionMaxBytes = 1 << 20
				rt.Partitions = append(rt.Partitions, rp)
				req.Topics = append(req.Topics, rt)
			}
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				t.Fatal(err)
			}
			return resp
		}
		unknown := [16]byte{0xde, 0xad}
		resp := fetch(18, -1, ids["e2e.c"], unknown, ids["e2e.c"])
		if resp.ErrorCode != 0 || len(resp.Topics) != 2 {
			t.Fatalf("v18 fetch: %+v", resp)
		}
		if got := resp.Topics[0]; got.TopicID != ids["e2e.c"] || len(got.Partitions) != 1 || got.Partitions[0].ErrorCode != 0 ||
			got.Partitions[0].HighWatermark <= 0 || len(got.Partitions[0].RecordBatches) == 0 {
			t.Fatalf("known topic id answered %+v", got)
		}
		if got := resp.Topics[1]; got.TopicID != unknown || got.Partitions[0].ErrorCode != kerr.UnknownTopicID.Code {
			t.Fatalf("unknown topic id answered %+v, want UNKNOWN_TOPIC_ID", got)
		}
		// No fetch session is ever created: an incremental request names
		// a session this gateway does not have.
		if resp := fetch(13, 3, ids["e2e.c"]); resp.ErrorCode != kerr.FetchSessionIDNotFound.Code || len(resp.Topics) != 0 || resp.SessionID != 0 {
			t.Fatalf("incremental fetch: %+v, want FETCH_SESSION_ID_NOT_FOUND", resp)
		}
		if resp := fetch(13, 0, ids["e2e.c"]); resp.ErrorCode != 0 || resp.SessionID != 0 || len(resp.Topics) != 1 {
			t.Fatalf("full fetch starting a session: %+v, want an answer with session id 0", resp)
		}
	})

	t.Run("DescribeTopicPartitions", func(t *testing.T) {
		cl := mustClient(t, g.addr)
		describe := func(limit int32, cursor *kmsg.DescribeTopicPartitionsRequestCursor, topics ...string) *kmsg.DescribeTopicPartitionsResponse {
			t.Helper()
			req := kmsg.NewPtrDescribeTopicPartitionsRequest()
			req.ResponsePartitionLimit, req.Cursor = limit, cursor
			for _, name := range topics {
				rt := kmsg.NewDescribeTopicPartitionsRequestTopic()
				rt.Topic = name
				req.Topics = append(req.Topics, rt)
			}
			resp, err := req.RequestWith(ctx, cl)
			if err != nil {
				t.Fatal(err)
			}
			return resp
		}
		type part struct {
			topic string
			p     int32
		}
		ids := topicIDs(t, cl)
		// Page through every topic, 2 partitions at a time: each
		// partition once, in order, with Metadata's topic ids.
		var got []part
		var cursor *kmsg.DescribeTopicPartitionsRequestCursor
		pages := 0
		for {
			resp := describe(2, cursor)
			pages++
			for _, dt := range resp.Topics {
				if dt.ErrorCode != 0 || dt.TopicID != ids[*dt.Topic] {
					t.Fatalf("topic %+v", dt)
				}
				for _, dp := range dt.Partitions {
					if dp.LeaderID != 0 || len(dp.Replicas) != 1 || len(dp.ISR) != 1 || dp.LeaderEpoch < 0 {
						t.Fatalf("partition %+v", dp)
					}
					got = append(got, part{*dt.Topic, dp.Partition})
				}
			}
			if resp.NextCursor == nil {
				break
			}
			cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: resp.NextCursor.Topic, Partition: resp.NextCursor.Partition}
		}
		var want []part
		for _, name := range []string{"e2e.a", "e2e.b", "e2e.c"} {
			for p := range int32(3) {
				want = append(want, part{name, p})
			}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) || pages != 5 {
			t.Fatalf("paged %v in %d pages, want %v in 5", got, pages, want)
		}
		// A limit spent exactly at a topic's end points at the next topic.
		resp := describe(3, nil, "e2e.c", "e2e.a")
		if len(resp.Topics) != 1 || *resp.Topics[0].Topic != "e2e.a" || resp.NextCursor == nil ||
			resp.NextCursor.Topic != "e2e.c" || resp.NextCursor.Partition != 0 {
			t.Fatalf("limit 3 of two topics: %+v", resp)
		}
		// Unknown and illegal names, without a topic id.
		resp = describe(0, nil, "e2e.nope", "bad/name")
		codes := map[string]int16{}
		for _, dt := range resp.Topics {
			if dt.TopicID != [16]byte{} || len(dt.Partitions) != 0 {
				t.Fatalf("unserved topic %+v", dt)
			}
			codes[*dt.Topic] = dt.ErrorCode
		}
		if codes["e2e.nope"] != kerr.UnknownTopicOrPartition.Code || codes["bad/name"] != kerr.InvalidTopicException.Code {
			t.Fatalf("unserved topics answered %v", codes)
		}
		// A cursor on a topic not asked for is an invalid request.
		resp = describe(10, &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "e2e.b"}, "e2e.a", "e2e.c")
		if len(resp.Topics) != 2 || resp.Topics[0].ErrorCode != kerr.InvalidRequest.Code || resp.Topics[1].ErrorCode != kerr.InvalidRequest.Code {
			t.Fatalf("cursor outside the topics: %+v", resp)
		}
	})
}

// waitEndOffsets waits until topic's partitions hold n records in all.
func waitEndOffsets(t *testing.T, addr, topic string, n int64) {
	t.Helper()
	adm := kadm.NewClient(mustClient(t, addr))
	deadline := time.Now().Add(60 * time.Second)
	for {
		var total int64
		ends, err := adm.ListEndOffsets(context.Background(), topic)
		if err == nil {
			ends.Each(func(o kadm.ListedOffset) {
				if o.Err == nil {
					total += o.Offset
				}
			})
		}
		if total == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s holds %d records, want %d (%v)", topic, total, n, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// fetchAtVersion issues req at req.Version, through a client pinned there
// that dials cl's seed brokers: kgo sends a request at the highest version
// both sides speak whatever its Version says, and from v13 a Fetch names
// topics by id, not by the names these raw requests use.
func fetchAtVersion(ctx context.Context, t *testing.T, cl *kgo.Client, req *kmsg.FetchRequest) *kmsg.FetchResponse {
	t.Helper()
	seeds, _ := cl.OptValue(kgo.SeedBrokers).([]string)
	vs := kversion.Stable()
	vs.SetMaxKeyVersion(kmsg.Fetch.Int16(), req.Version)
	pc, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.MaxVersions(vs))
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	resp, err := req.RequestWith(ctx, pc)
	if err != nil {
		t.Fatalf("fetch v%d: %v", req.Version, err)
	}
	return resp
}

// TestProduceV13ByTopicID: Produce v13 names topics by id (KIP-516), as a
// Kafka 4.4 producer sends it when the broker serves it: records produced
// at v13 and at v11 land on the same topic and read back; an unknown id is
// UNKNOWN_TOPIC_ID.
func TestProduceV13ByTopicID(t *testing.T) {
	g := startGateway(t, t.TempDir(), "", "--commit-interval", "20ms")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const topic = "by_id"
	adm := kadm.NewClient(mustClient(t, g.addr))
	if resp, err := adm.CreateTopics(ctx, 1, 1, nil, topic); err != nil || resp[topic].Err != nil {
		t.Fatalf("create topic: %v %v", err, resp[topic].Err)
	}
	var versions []int16
	for _, v := range []int16{13, 11} {
		cl := pinned(t, g.addr, kmsg.Produce.Int16(), v, kgo.WithLogger(&produceVersions{versions: &versions}))
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte(fmt.Sprintf("at v%d", v))}).FirstErr(); err != nil {
			t.Fatalf("produce at v%d: %v", v, err)
		}
	}
	if !slices.Equal(versions, []int16{13, 11}) {
		t.Fatalf("produce requests went out at versions %v, want [13 11]", versions)
	}
	rs := consumeAllOf(t, g.addr, topic, 2)
	if string(rs[0].Value) != "at v13" || string(rs[1].Value) != "at v11" || rs[0].Topic != topic {
		t.Fatalf("read back %q and %q from %s", rs[0].Value, rs[1].Value, rs[0].Topic)
	}

	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = 13, -1, 5000
	rt := kmsg.NewProduceRequestTopic()
	rt.TopicID = [16]byte{0xde, 0xad}
	rp := kmsg.NewProduceRequestTopicPartition()
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, pinned(t, g.addr, kmsg.Produce.Int16(), 13))
	if err != nil {
		t.Fatal(err)
	}
	if got := resp.Topics[0]; got.TopicID != rt.TopicID || got.Partitions[0].ErrorCode != kerr.UnknownTopicID.Code {
		t.Fatalf("produce to an unknown topic id answered %+v, want UNKNOWN_TOPIC_ID", got)
	}
}

// produceVersions records the version of each Produce request a client
// wrote, from the client's own debug log ("wrote Produce v13").
type produceVersions struct {
	mu       sync.Mutex
	versions *[]int16
}

func (p *produceVersions) Level() kgo.LogLevel { return kgo.LogLevelDebug }

func (p *produceVersions) Log(_ kgo.LogLevel, msg string, _ ...any) {
	var v int16
	if _, err := fmt.Sscanf(msg, "wrote Produce v%d", &v); err == nil {
		p.mu.Lock()
		*p.versions = append(*p.versions, v)
		p.mu.Unlock()
	}
}
