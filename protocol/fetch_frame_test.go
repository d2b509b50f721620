package protocol

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lakegw/lakegw/fetch"
)

// TestFetchFrameMatchesKmsg builds random Fetch responses of every version
// the gateway serves, with each partition's batches split into spans of
// memory and of a file, and checks that the layout, joined, is the frame
// kmsg encodes, byte for byte.
func TestFetchFrameMatchesKmsg(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	file := newSpanFile(t)
	for i := range 500 {
		resp := randomFetchResponse(rng, int16(4+i%15))
		corr := rng.Int32()
		want := frameResponse(&request{msg: resp.RequestKind(), correlationID: corr}, resp, nil)
		var batches [][]fetch.Batches
		for _, rt := range resp.Topics {
			var tb []fetch.Batches
			for _, p := range rt.Partitions {
				tb = append(tb, file.split(t, rng, p.RecordBatches))
			}
			batches = append(batches, tb)
		}
		_, spans, ok := layoutFetch(nil, corr, resp, batches)
		if !ok {
			t.Fatalf("response %d (v%d): not framed", i, resp.Version)
		}
		if got := joinSpans(t, spans); !bytes.Equal(got, want) {
			t.Fatalf("response %d (v%d): frame differs from kmsg's\n got %x\nwant %x", i, resp.Version, got, want)
		}
	}
}

// spanFile is a file that test batches are written to, to be sent from.
type spanFile struct {
	f    *os.File
	size int64
}

func newSpanFile(t *testing.T) *spanFile {
	f, err := os.Create(filepath.Join(t.TempDir(), "batches"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return &spanFile{f: f}
}

// split cuts b into up to three spans, each kept in memory or written to
// the file.
func (sf *spanFile) split(t *testing.T, rng *rand.Rand, b []byte) fetch.Batches {
	var out fetch.Batches
	for len(b) > 0 {
		n := len(b)
		if rng.IntN(2) == 0 {
			n = 1 + rng.IntN(len(b))
		}
		piece := b[:n]
		b = b[n:]
		if rng.IntN(2) == 0 {
			out = append(out, fetch.BytesSpan(piece))
			continue
		}
		if _, err := sf.f.WriteAt(piece, sf.size); err != nil {
			t.Fatal(err)
		}
		out = append(out, fetch.FileSpan(sf.f, sf.size, n))
		sf.size += int64(n)
	}
	return out
}

func joinSpans(t *testing.T, spans []fetch.Span) []byte {
	var got []byte
	for _, s := range spans {
		f, off, n := s.File()
		if f == nil {
			got = append(got, s.Bytes()...)
			continue
		}
		at := len(got)
		got = append(got, make([]byte, n)...)
		if _, err := f.ReadAt(got[at:], off); err != nil {
			t.Fatal(err)
		}
	}
	return got
}

func TestFetchFrameDeclinesWhatItDoesNotWrite(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, change := range []func(*kmsg.FetchResponse){
		func(r *kmsg.FetchResponse) { r.Version = 19 },
		func(r *kmsg.FetchResponse) {
			r.Version, r.Brokers = 16, []kmsg.FetchResponseBroker{{NodeID: 0, Host: "h", Port: 1}}
		},
		func(r *kmsg.FetchResponse) {
			r.Topics[0].Partitions[0].AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{{}}
		},
		func(r *kmsg.FetchResponse) { r.Topics[0].Partitions[0].CurrentLeader.LeaderID = 1 },
		func(r *kmsg.FetchResponse) { r.Topics[0].Partitions[0].RecordBatches = nil },
	} {
		resp := randomFetchResponse(rng, 12)
		resp.Topics = append(resp.Topics, kmsg.NewFetchResponseTopic())
		resp.Topics[0].Partitions = append(resp.Topics[0].Partitions, kmsg.NewFetchResponseTopicPartition())
		resp.Topics[0].Partitions[0].RecordBatches = []byte{}
		change(resp)
		if _, _, ok := layoutFetch(nil, 1, resp, nil); ok {
			t.Fatalf("framed a response it cannot write: %+v", resp.Topics[0].Partitions[0])
		}
	}
}

// An answer layoutFetch declines (here: aborted transactions, which the
// gateway never sets) is encoded by kmsg from its batches' bytes, read from
// their files.
func TestFetchFrameMaterializesWhatItDoesNotLayOut(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	file := newSpanFile(t)
	r, err := fetch.NewReader(fetch.Config{}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for i := range 50 {
		want := randomFetchResponse(rng, int16(4+i%15))
		want.Topics = append(want.Topics, kmsg.NewFetchResponseTopic())
		declined := kmsg.NewFetchResponseTopicPartition()
		declined.AbortedTransactions = []kmsg.FetchResponseTopicPartitionAbortedTransaction{{}}
		declined.RecordBatches = []byte{}
		want.Topics[len(want.Topics)-1].Partitions = append(want.Topics[len(want.Topics)-1].Partitions, declined)
		got := &fetchAnswer{FetchResponse: kmsg.NewPtrFetchResponse(), spans: r.NewSpans(0)}
		*got.FetchResponse = *want
		got.Topics = nil
		for _, rt := range want.Topics {
			gt := rt
			gt.Partitions = nil
			var tb []fetch.Batches
			for _, p := range rt.Partitions {
				tb = append(tb, file.split(t, rng, p.RecordBatches))
				p.RecordBatches = []byte{}
				gt.Partitions = append(gt.Partitions, p)
			}
			got.Topics = append(got.Topics, gt)
			got.batches = append(got.batches, tb)
		}
		req := &request{msg: want.RequestKind(), correlationID: rng.Int32()}
		req.msg.SetVersion(want.Version)
		f := (&conn{log: zerolog.Nop()}).fetchFrame(req, got)
		if f.spans != nil || !bytes.Equal(f.b, frameResponse(req, want, nil)) {
			t.Fatalf("answer %d (v%d): not the frame kmsg encodes", i, want.Version)
		}
		f.finish()
	}
}

func randomFetchResponse(rng *rand.Rand, version int16) *kmsg.FetchResponse {
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = version
	resp.ThrottleMillis = rng.Int32N(100)
	resp.ErrorCode = int16(rng.IntN(3))
	resp.SessionID = rng.Int32()
	for range rng.IntN(4) {
		t := kmsg.NewFetchResponseTopic()
		t.Topic = string(bytes.Repeat([]byte{'a' + byte(rng.IntN(26))}, rng.IntN(300)))
		if version >= 13 {
			// Topics by id: the name is not written (and kmsg decodes none).
			t.Topic = ""
			for k := range t.TopicID {
				t.TopicID[k] = byte(rng.Uint32())
			}
		}
		for range rng.IntN(5) {
			p := kmsg.NewFetchResponseTopicPartition()
			p.Partition = rng.Int32N(64)
			p.ErrorCode = int16(rng.IntN(100))
			p.HighWatermark, p.LastStableOffset, p.LogStartOffset = rng.Int64(), rng.Int64(), rng.Int64()
			p.PreferredReadReplica = -1
			p.RecordBatches = make([]byte, rng.IntN(3)*rng.IntN(200))
			for k := range p.RecordBatches {
				p.RecordBatches[k] = byte(rng.Uint32())
			}
			if rng.IntN(3) == 0 {
				p.DivergingEpoch.Epoch, p.DivergingEpoch.EndOffset = rng.Int32N(9), rng.Int64N(1<<40)
			}
			t.Partitions = append(t.Partitions, p)
		}
		resp.Topics = append(resp.Topics, t)
	}
	return resp
}

// BenchmarkFrameFetchResponse frames a 1 MiB answer of one partition, as a
// consumer's fetch gets: copied into a frame by kmsg, or laid out around
// the batches for writev.
func BenchmarkFrameFetchResponse(b *testing.B) {
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = 12
	t := kmsg.NewFetchResponseTopic()
	t.Topic = "bench.orders"
	p := kmsg.NewFetchResponseTopicPartition()
	p.RecordBatches = make([]byte, 1<<20)
	t.Partitions = append(t.Partitions, p)
	resp.Topics = append(resp.Topics, t)
	req := &request{msg: resp.RequestKind(), correlationID: 7}
	b.Run("copy", func(b *testing.B) {
		b.SetBytes(1 << 20)
		buf := make([]byte, 0, 2<<20)
		for b.Loop() {
			buf = frameResponse(req, resp, buf)
		}
	})
	b.Run("writev", func(b *testing.B) {
		b.SetBytes(1 << 20)
		head := make([]byte, 0, 4096)
		for b.Loop() {
			head, _, _ = layoutFetch(head, 7, resp, nil)
		}
	})
	// v13+ (Kafka 4 clients) names the topic by id.
	byID := *resp
	byID.Version = 18
	byID.Topics = []kmsg.FetchResponseTopic{resp.Topics[0]}
	byID.Topics[0].Topic, byID.Topics[0].TopicID = "", [16]byte{1, 2, 3}
	b.Run("writev-v18", func(b *testing.B) {
		b.SetBytes(1 << 20)
		head := make([]byte, 0, 4096)
		for b.Loop() {
			head, _, _ = layoutFetch(head, 7, &byID, nil)
		}
	})
}
