package protocol

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"reflect"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Every request below its API's range is answered, at its own version,
// with UNSUPPORTED_VERSION in every error field that version has: the
// top-level one when it has one, else each partition's. None of the APIs
// served from above v0 has a response without error fields, so none of
// them closes the connection.
func TestRequestsBelowRangeAreAnsweredUnsupportedVersion(t *testing.T) {
	tested := 0
	defer func() {
		// Fetch v0-3, ListOffsets v0, OffsetForLeaderEpoch v0-1,
		// OffsetCommit v0-1 and OffsetFetch v0 at least.
		if tested < 9 && !t.Failed() {
			t.Fatalf("%d requests below a range tested", tested)
		}
	}()
	for key, h := range handlers {
		for v := int16(0); v < h.min; v++ {
			tested++
			name := kmsg.NameForKey(key)
			req := kmsg.RequestForKey(key)
			fillFields(reflect.ValueOf(req).Elem(), 0)
			req.SetVersion(v)
			parsed, err := parseRequest(frameBody(req, 77, "old-client"))
			if err != nil {
				t.Fatalf("%s v%d: %v", name, v, err)
			}
			if parsed.earlyResponse == nil || parsed.unsupported == nil {
				t.Fatalf("%s v%d: not answered early as an unsupported version", name, v)
			}
			resp := decodeEarly(t, parsed.earlyResponse, req, 77)
			top, nested := errorCodes(reflect.ValueOf(resp).Elem())
			switch {
			case top == kerr.UnsupportedVersion.Code:
			case len(nested) == 0:
				t.Fatalf("%s v%d: no error field says UNSUPPORTED_VERSION: %+v", name, v, resp)
			default:
				for _, code := range nested {
					if code != kerr.UnsupportedVersion.Code {
						t.Fatalf("%s v%d: a partition answered %d, want UNSUPPORTED_VERSION: %+v", name, v, code, resp)
					}
				}
			}
		}
	}
}

// decodeEarly decodes a framed response to req (correlation id corr).
func decodeEarly(t *testing.T, frame []byte, req kmsg.Request, corr int32) kmsg.Response {
	t.Helper()
	if int(binary.BigEndian.Uint32(frame)) != len(frame)-4 || int32(binary.BigEndian.Uint32(frame[4:])) != corr {
		t.Fatalf("bad frame: size or correlation id")
	}
	body := frame[8:]
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	if resp.IsFlexible() {
		body = body[1:] // no header tags
	}
	if err := resp.ReadFrom(body); err != nil {
		t.Fatalf("%s v%d: the answer does not decode: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	return resp
}

// errorCodes returns v's top-level ErrorCode and those of the elements
// of its slices, at any depth.
func errorCodes(v reflect.Value) (top int16, nested []int16) {
	if f := v.FieldByName("ErrorCode"); f.IsValid() && f.Kind() == reflect.Int16 {
		top = int16(f.Int())
	}
	var walk func(v reflect.Value)
	walk = func(v reflect.Value) {
		for i := 0; i < v.NumField(); i++ {
			f := v.Field(i)
			if f.Kind() != reflect.Slice || f.Type().Elem().Kind() != reflect.Struct {
				continue
			}
			for j := 0; j < f.Len(); j++ {
				e := f.Index(j)
				if c := e.FieldByName("ErrorCode"); c.IsValid() && c.Kind() == reflect.Int16 {
					nested = append(nested, int16(c.Int()))
				}
				walk(e)
			}
		}
	}
	walk(v)
	return top, nested
}

// A field is in a response version when setting it changes the encoding.
func TestSetTopLevelErrorCodeOnlyWhereTheVersionHasIt(t *testing.T) {
	for _, tc := range []struct {
		resp kmsg.Response
		want bool
	}{
		{&kmsg.FetchResponse{Version: 6}, false},
		{&kmsg.FetchResponse{Version: 7}, true},
		{&kmsg.OffsetFetchResponse{Version: 1}, false},
		{&kmsg.OffsetFetchResponse{Version: 2}, true},
		{&kmsg.JoinGroupResponse{Version: 0}, true},
		{&kmsg.ListOffsetsResponse{Version: 0}, false},
	} {
		got := setTopLevelErrorCode(tc.resp, 35)
		code := reflect.ValueOf(tc.resp).Elem().FieldByName("ErrorCode")
		if got != tc.want || (code.IsValid() && (code.Int() == 35) != tc.want) {
			t.Fatalf("%T v%d: %v (field %v), want %v", tc.resp, tc.resp.GetVersion(), got, code, tc.want)
		}
	}
}

// testServer is a Server without topics on a loopback port, logging to
// sink; it stops with the test.
func testServer(t *testing.T, sink *syncBuffer) *Server {
	t.Helper()
	s := NewServer(Config{Listen: "127.0.0.1:0", ClusterID: "test-cluster"}, nil, nil, nil, zerolog.New(sink))
	if err := s.Listen(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan struct{})
	go func() {
		defer close(served)
		_ = s.Serve(ctx)
	}()
	t.Cleanup(func() { cancel(); <-served })
	return s
}

// wireClient sends framed requests and reads their answers.
type wireClient struct {
	t    *testing.T
	nc   net.Conn
	r    *bufio.Reader
	corr int32
}

func dialWire(t *testing.T, s *Server) *wireClient {
	t.Helper()
	nc, err := net.Dial("tcp", s.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { nc.Close() })
	return &wireClient{t: t, nc: nc, r: bufio.NewReader(nc)}
}

// roundTrip sends req and returns its decoded answer, or the read error
// (io.EOF: the connection was closed).
func (w *wireClient) roundTrip(req kmsg.Request) (kmsg.Response, error) {
	w.t.Helper()
	w.corr++
	body := frameBody(req, w.corr, "wire-test")
	if _, err := w.nc.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)); err != nil {
		return nil, err
	}
	_ = w.nc.SetReadDeadline(time.Now().Add(10 * time.Second))
	var size [4]byte
	if _, err := io.ReadFull(w.r, size[:]); err != nil {
		return nil, err
	}
	frame := make([]byte, 4+binary.BigEndian.Uint32(size[:]))
	copy(frame, size[:])
	if _, err := io.ReadFull(w.r, frame[4:]); err != nil {
		return nil, err
	}
	if req.Key() == kmsg.ApiVersions.Int16() && req.GetVersion() >= 3 {
		// The ApiVersions answer header has no tags: decode it as if
		// it had an empty set.
		frame = append(frame[:8:8], append([]byte{0}, frame[8:]...)...)
		binary.BigEndian.PutUint32(frame, uint32(len(frame)-4))
	}
	return decodeEarly(w.t, frame, req, w.corr), nil
}

// The raw protocol of a request below its range (Fetch v3, as sarama
// configured for Kafka 0.10.2 sends): answered UNSUPPORTED_VERSION at v3
// on a connection that stays open, and logged as an unsupported version.
// One above the range closes the connection, also logged as an
// unsupported version; neither is a malformed request.
func TestUnsupportedVersionsOverTheWire(t *testing.T) {
	var sink syncBuffer
	s := testServer(t, &sink)
	w := dialWire(t, s)

	fetch := kmsg.NewPtrFetchRequest()
	fetch.Version = 3
	rt := kmsg.NewFetchRequestTopic()
	rt.Topic = "ns.t"
	for p := range int32(2) {
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.PartitionMaxBytes = p, 1<<20
		rt.Partitions = append(rt.Partitions, rp)
	}
	fetch.Topics = append(fetch.Topics, rt)
	resp, err := w.roundTrip(fetch)
	if err != nil {
		t.Fatalf("Fetch v3: %v", err)
	}
	fr := resp.(*kmsg.FetchResponse)
	if len(fr.Topics) != 1 || fr.Topics[0].Topic != "ns.t" || len(fr.Topics[0].Partitions) != 2 {
		t.Fatalf("Fetch v3 answered %+v", fr)
	}
	for i, p := range fr.Topics[0].Partitions {
		if p.Partition != int32(i) || p.ErrorCode != kerr.UnsupportedVersion.Code || p.HighWatermark != -1 {
			t.Fatalf("Fetch v3 partition %+v, want UNSUPPORTED_VERSION", p)
		}
	}
	// The connection is still open.
	av := kmsg.NewPtrApiVersionsRequest()
	av.Version = 2
	if resp, err := w.roundTrip(av); err != nil || resp.(*kmsg.ApiVersionsResponse).ErrorCode != 0 {
		t.Fatalf("ApiVersions after the unsupported Fetch: %v %+v", err, resp)
	}
	if n := len(sink.lines(unsupportedVersion)); n != 1 {
		t.Fatalf("%d lines %q, want 1; log:\n%s", n, unsupportedVersion, sink.String())
	}

	fetch.Version = 19
	if _, err := w.roundTrip(fetch); !errors.Is(err, io.EOF) {
		t.Fatalf("Fetch v19: %v, want the connection closed", err)
	}
	if n := len(sink.lines(unsupportedVersionClosed)); n != 1 {
		t.Fatalf("%d lines %q, want 1; log:\n%s", n, unsupportedVersionClosed, sink.String())
	}
	if n := len(sink.lines(malformedRequest)); n != 0 {
		t.Fatalf("unsupported versions logged as malformed requests; log:\n%s", sink.String())
	}
}

// ApiVersions v5 (KIP-1242): a client that knows the cluster and node it
// means to reach says so; another cluster or node is REBOOTSTRAP_REQUIRED,
// one of the two without the other INVALID_REQUEST, neither (bootstrap)
// the usual answer.
func TestApiVersionsV5ChecksClusterAndNode(t *testing.T) {
	var sink syncBuffer
	w := dialWire(t, testServer(t, &sink))
	str := func(s string) *string { return &s }
	for _, tc := range []struct {
		name    string
		cluster *string
		node    int32
		want    int16
	}{
		{"bootstrap", nil, -1, 0},
		{"this cluster and node", str("test-cluster"), 0, 0},
		{"another cluster", str("other"), 0, kerr.RebootstrapRequired.Code},
		{"another node", str("test-cluster"), 3, kerr.RebootstrapRequired.Code},
		{"cluster without node", str("test-cluster"), -1, kerr.InvalidRequest.Code},
		{"node without cluster", nil, 0, kerr.InvalidRequest.Code},
	} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version, req.ClientSoftwareName, req.ClientSoftwareVersion = 5, "test", "1"
		req.ClusterID, req.NodeID = tc.cluster, tc.node
		resp, err := w.roundTrip(req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		av := resp.(*kmsg.ApiVersionsResponse)
		if av.ErrorCode != tc.want || (tc.want == 0) != (len(av.ApiKeys) > 0) {
			t.Fatalf("%s: error %d with %d keys, want %d", tc.name, av.ErrorCode, len(av.ApiKeys), tc.want)
		}
		if tc.want == 0 {
			for _, k := range av.ApiKeys {
				if k.ApiKey == kmsg.ApiVersions.Int16() && k.MaxVersion != 5 {
					t.Fatalf("ApiVersions advertised up to v%d", k.MaxVersion)
				}
			}
		}
	}
	// v6 does not exist yet: the v0-form answer, which a client can read
	// whatever version it sent.
	body := frameBody(&kmsg.ApiVersionsRequest{Version: 6}, 9, "x")
	if _, err := w.nc.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(body))), body...)); err != nil {
		t.Fatal(err)
	}
	var size [4]byte
	if _, err := io.ReadFull(w.r, size[:]); err != nil {
		t.Fatal(err)
	}
	rest := make([]byte, binary.BigEndian.Uint32(size[:]))
	if _, err := io.ReadFull(w.r, rest); err != nil {
		t.Fatal(err)
	}
	v0 := kmsg.ApiVersionsResponse{Version: 0}
	if err := v0.ReadFrom(rest[4:]); err != nil || v0.ErrorCode != kerr.UnsupportedVersion.Code || len(v0.ApiKeys) == 0 {
		t.Fatalf("ApiVersions v6: %v %+v", err, v0)
	}
}

// FindCoordinator v6 brought key type 2, a share group's: this gateway
// has no share groups and answers as a Kafka broker without a share
// coordinator, INVALID_REQUEST naming no node.
func TestFindCoordinatorV6ShareKeyIsInvalid(t *testing.T) {
	var sink syncBuffer
	w := dialWire(t, testServer(t, &sink))
	for _, tc := range []struct {
		keyType int8
		want    int16
	}{{coordinatorShare, kerr.InvalidRequest.Code}, {3, kerr.InvalidRequest.Code}, {coordinatorGroup, 0}} {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.Version, req.CoordinatorType, req.CoordinatorKeys = 6, tc.keyType, []string{"g:topic:0"}
		resp, err := w.roundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		cs := resp.(*kmsg.FindCoordinatorResponse).Coordinators
		if len(cs) != 1 || cs[0].ErrorCode != tc.want || cs[0].Key != "g:topic:0" {
			t.Fatalf("key type %d: %+v, want error %d", tc.keyType, cs, tc.want)
		}
		if tc.want != 0 && (cs[0].NodeID != -1 || cs[0].Host != "" || cs[0].Port != -1) {
			t.Fatalf("key type %d: an error naming a node: %+v", tc.keyType, cs[0])
		}
		if tc.want == 0 && (cs[0].NodeID != 0 || cs[0].Port <= 0) {
			t.Fatalf("group coordinator %+v, want this gateway", cs[0])
		}
	}
}
