package protocol

import (
	"encoding/binary"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// frameBody encodes a request as a frame body (header v1/v2 + request).
func frameBody(req kmsg.Request, corr int32) []byte {
	b := binary.BigEndian.AppendUint16(nil, uint16(req.Key()))
	b = binary.BigEndian.AppendUint16(b, uint16(req.GetVersion()))
	b = binary.BigEndian.AppendUint32(b, uint32(corr))
	b = binary.BigEndian.AppendUint16(b, 4)
	b = append(b, "fuzz"...)
	if req.IsFlexible() {
		b = append(b, 0)
	}
	return req.AppendTo(b)
}

// seedRequests are well-formed requests of every API we answer, at their
// lowest and highest versions.
func seedRequests() [][]byte {
	var out [][]byte
	for key, h := range handlers {
		for _, v := range []int16{h.min, h.max} {
			req := kmsg.RequestForKey(key)
			req.SetVersion(v)
			out = append(out, frameBody(req, int32(key)))
		}
	}
	f := kmsg.NewPtrFetchRequest()
	f.Version = 12
	ft := kmsg.NewFetchRequestTopic()
	ft.Topic = "demo.orders"
	ft.Partitions = []kmsg.FetchRequestTopicPartition{kmsg.NewFetchRequestTopicPartition()}
	f.Topics = []kmsg.FetchRequestTopic{ft}
	out = append(out, frameBody(f, 7))
	return out
}

// FuzzParseRequest feeds arbitrary frame bodies to the request decoder: it
// must return a request or an error, never panic, and whatever it accepts
// must encode again.
func FuzzParseRequest(f *testing.F) {
	for _, s := range seedRequests() {
		f.Add(s)
	}
	f.Add([]byte{})
	f.Add([]byte{0, 18, 0, 99, 0, 0, 0, 1, 255, 255}) // ApiVersions v99
	f.Add([]byte{0x7f, 0x7f, 0, 0, 0, 0, 0, 1, 255, 255})
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := parseRequest(body)
		if err != nil {
			return
		}
		if req.earlyResponse != nil {
			return
		}
		_ = req.msg.AppendTo(nil)
	})
}

func TestParseRequestRejectsBadInput(t *testing.T) {
	for name, body := range map[string][]byte{
		"empty":            {},
		"short header":     {0, 1, 0},
		"unknown key":      {0x7f, 0x7f, 0, 0, 0, 0, 0, 1, 255, 255},
		"version too high": {0, 1, 0, 99, 0, 0, 0, 1, 255, 255},
		"truncated body":   frameBody(kmsg.NewPtrFetchRequest(), 1)[:12],
	} {
		if _, err := parseRequest(body); err == nil {
			t.Errorf("%s: parsed without error", name)
		}
	}
	req, err := parseRequest([]byte{0, 18, 0, 99, 0, 0, 0, 1, 255, 255})
	if err != nil || req.earlyResponse == nil {
		t.Fatalf("ApiVersions v99: want an early UNSUPPORTED_VERSION answer, got %v", err)
	}
	var resp kmsg.ApiVersionsResponse
	resp.Version = 0
	if err := resp.ReadFrom(req.earlyResponse[8:]); err != nil || resp.ErrorCode != 35 || len(resp.ApiKeys) == 0 {
		t.Fatalf("early answer: err %v code %d keys %d", err, resp.ErrorCode, len(resp.ApiKeys))
	}
}

func TestSeedRequestsParse(t *testing.T) {
	for i, s := range seedRequests() {
		if _, err := parseRequest(s); err != nil {
			t.Errorf("seed %d: %v", i, err)
		}
	}
}
