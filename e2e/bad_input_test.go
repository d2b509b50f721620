package e2e

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// expectClosed sends raw bytes and requires the gateway to close the
// connection (reading returns EOF or reset) within a few seconds.
func expectClosed(t *testing.T, addr string, payload []byte) {
	t.Helper()
	nc, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := nc.Write(payload); err != nil {
		return // already closed
	}
	nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 64)
	for {
		_, err := nc.Read(buf)
		if err == nil {
			continue
		}
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("connection still open 5s after a bad frame")
		}
		if err == io.EOF || strings.Contains(err.Error(), "reset") {
			return
		}
		t.Fatalf("read: %v", err)
	}
}

func frame(body []byte) []byte {
	return append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)
}

func TestBadInputIsAnsweredOrClosedNeverCrashes(t *testing.T) {
	dir := t.TempDir()
	w := setupTable(t, dir)
	g := startGateway(t, dir, "", "--max-request-bytes", "65536")
	n := int64(len(w.allRows()))

	t.Run("oversized frame", func(t *testing.T) {
		expectClosed(t, g.addr, binary.BigEndian.AppendUint32(nil, 1<<20))
	})
	t.Run("negative frame size", func(t *testing.T) {
		expectClosed(t, g.addr, []byte{0xff, 0xff, 0xff, 0xf0})
	})
	t.Run("garbage", func(t *testing.T) {
		expectClosed(t, g.addr, frame([]byte("this is not a kafka request at all")))
	})
	t.Run("unknown api key", func(t *testing.T) {
		expectClosed(t, g.addr, frame([]byte{0x7f, 0x00, 0, 0, 0, 0, 0, 1, 0xff, 0xff}))
	})
	t.Run("unsupported fetch version", func(t *testing.T) {
		expectClosed(t, g.addr, frame([]byte{0, 1, 0, 2, 0, 0, 0, 1, 0xff, 0xff}))
	})
	t.Run("truncated body", func(t *testing.T) {
		req := kmsg.NewPtrMetadataRequest()
		req.Version = 12
		topic := "x"
		req.Topics = []kmsg.MetadataRequestTopic{{Topic: &topic}}
		body := binary.BigEndian.AppendUint16(nil, 3)
		body = binary.BigEndian.AppendUint16(body, 12)
		body = binary.BigEndian.AppendUint32(body, 9)
		body = append(body, 0xff, 0xff, 0)
		full := req.AppendTo(body)
		expectClosed(t, g.addr, frame(full[:len(full)-3]))
	})

	cl := mustClient(t, g.addr)
	t.Run("unknown topic", func(t *testing.T) {
		if p := rawFetch(t, cl, "no.such_table", 0, 12); p.ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Fatalf("fetch of an unknown topic: %v", kerr.ErrorForCode(p.ErrorCode))
		}
		req := kmsg.NewPtrMetadataRequest()
		name := "no.such_table"
		req.Topics = []kmsg.MetadataRequestTopic{{Topic: &name}}
		resp, err := req.RequestWith(context.Background(), cl)
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Topics) != 1 || resp.Topics[0].ErrorCode != kerr.UnknownTopicOrPartition.Code {
			t.Fatalf("metadata of an unknown topic: %+v", resp.Topics)
		}
	})
	t.Run("offset out of range", func(t *testing.T) {
		for _, off := range []int64{n + 1, -5} {
			p := rawFetch(t, cl, topic, off, 12)
			if p.ErrorCode != kerr.OffsetOutOfRange.Code {
				t.Fatalf("fetch at %d: %v, want OFFSET_OUT_OF_RANGE", off, kerr.ErrorForCode(p.ErrorCode))
			}
			if p.HighWatermark != n || p.LogStartOffset != 0 {
				t.Fatalf("fetch at %d: hwm %d log start %d", off, p.HighWatermark, p.LogStartOffset)
			}
		}
	})
	t.Run("produce is refused with a reason", func(t *testing.T) {
		req := kmsg.NewPtrProduceRequest()
		req.Version = 9
		req.Acks = -1
		req.TimeoutMillis = 1000
		rt := kmsg.NewProduceRequestTopic()
		rt.Topic = topic
		rt.Partitions = []kmsg.ProduceRequestTopicPartition{{Partition: 0}}
		req.Topics = []kmsg.ProduceRequestTopic{rt}
		// Pinned to v9: a client sends the newest version both speak, and
		// from v13 a topic is named by id.
		resp, err := req.RequestWith(context.Background(), pinned(t, g.addr, kmsg.Produce.Int16(), 9))
		if err != nil {
			t.Fatal(err)
		}
		p := resp.Topics[0].Partitions[0]
		if p.ErrorCode != kerr.PolicyViolation.Code || p.ErrorMessage == nil || !strings.Contains(*p.ErrorMessage, "read-only") {
			t.Fatalf("produce answer: %v %v", kerr.ErrorForCode(p.ErrorCode), p.ErrorMessage)
		}
	})

	// After all that, the gateway still serves, and said why it closed
	// each connection.
	checkRecords(t, w, consumeAll(t, g.addr, len(w.allRows())))
	logs := g.Logs()
	for _, want := range []string{"request frame size out of bounds", "malformed request"} {
		if !strings.Contains(logs, want) {
			t.Errorf("gateway log has no %q line", want)
		}
	}
}
