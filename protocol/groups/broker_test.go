package groups

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// testBroker is a minimal Kafka broker for the real-client test: one
// topic of three partitions led by this node, no records, and the group
// APIs answered by a Coordinator. It exists only to put the coordinator
// behind real framing; the gateway's own listener lives in protocol/.
type testBroker struct {
	c          *Coordinator
	topic      string
	partitions int32

	ln   net.Listener
	host string
	port int32

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
}

// brokerVersions is what ApiVersions advertises; group APIs come from the
// coordinator. Fetch and Metadata stop before topic ids.
var brokerVersions = map[kmsg.Key][2]int16{
	kmsg.ApiVersions:     {0, 3},
	kmsg.Metadata:        {1, 12}, // v10+: topic ids, which OffsetFetch v10 names topics by
	kmsg.FindCoordinator: {0, 4},
	kmsg.ListOffsets:     {1, 7},
	kmsg.Fetch:           {4, 11},
}

// testTopicID is the id of the test broker's topic.
var testTopicID = [16]byte{0x7e, 0x57}

func startTestBroker(c *Coordinator, topic string, partitions int32) (*testBroker, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	host, portStr, _ := net.SplitHostPort(ln.Addr().String())
	port, _ := strconv.Atoi(portStr)
	ctx, cancel := context.WithCancel(context.Background())
	b := &testBroker{c: c, topic: topic, partitions: partitions, ln: ln, host: host, port: int32(port),
		ctx: ctx, cancel: cancel, conns: make(map[net.Conn]struct{})}
	b.wg.Add(1)
	go b.accept()
	return b, nil
}

func (b *testBroker) addr() string { return b.ln.Addr().String() }

func (b *testBroker) close() {
	b.cancel()
	b.ln.Close()
	b.mu.Lock()
	for cn := range b.conns {
		cn.Close()
	}
	b.mu.Unlock()
	b.wg.Wait()
}

func (b *testBroker) accept() {
	defer b.wg.Done()
	for {
		cn, err := b.ln.Accept()
		if err != nil {
			return
		}
		b.mu.Lock()
		b.conns[cn] = struct{}{}
		b.mu.Unlock()
		b.wg.Add(1)
		go b.serve(cn)
	}
}

// serve answers one connection's requests in order, as Kafka does.
func (b *testBroker) serve(cn net.Conn) {
	defer b.wg.Done()
	ctx, cancel := context.WithCancel(b.ctx)
	defer func() {
		cancel()
		cn.Close()
		b.mu.Lock()
		delete(b.conns, cn)
		b.mu.Unlock()
	}()
	for {
		var size [4]byte
		if _, err := io.ReadFull(cn, size[:]); err != nil {
			return
		}
		n := binary.BigEndian.Uint32(size[:])
		if n > 16<<20 {
			return
		}
		buf := make([]byte, n)
		if _, err := io.ReadFull(cn, buf); err != nil {
			return
		}
		out, err := b.handle(ctx, cn, buf)
		if err != nil {
			return
		}
		if _, err := cn.Write(out); err != nil {
			return
		}
	}
}

// handle decodes one request (header v1, or v2 when the request version
// is flexible), answers it and frames the response.
func (b *testBroker) handle(ctx context.Context, cn net.Conn, buf []byte) ([]byte, error) {
	if len(buf) < 10 {
		return nil, errors.New("short request header")
	}
	key := int16(binary.BigEndian.Uint16(buf[0:]))
	version := int16(binary.BigEndian.Uint16(buf[2:]))
	corr := binary.BigEndian.Uint32(buf[4:])
	clientLen := int(int16(binary.BigEndian.Uint16(buf[8:])))
	rest := buf[10:]
	clientID := ""
	if clientLen > 0 {
		if clientLen > len(rest) {
			return nil, errors.New("short client id")
		}
		clientID, rest = string(rest[:clientLen]), rest[clientLen:]
	}
	req := kmsg.RequestForKey(key)
	if req == nil {
		return nil, fmt.Errorf("unknown api key %d", key)
	}
	req.SetVersion(version)
	if req.IsFlexible() {
		var err error
		if rest, err = skipTags(rest); err != nil {
			return nil, err
		}
	}

	var resp kmsg.Response
	if av, ok := req.(*kmsg.ApiVersionsRequest); ok && version > brokerVersions[kmsg.ApiVersions][1] {
		// Unknown ApiVersions version: UNSUPPORTED_VERSION in v0 form so
		// the client can retry with one we know.
		r := b.apiVersions(av)
		r.Version = 0
		r.ErrorCode = kerr.UnsupportedVersion.Code
		resp = r
	} else {
		if err := req.ReadFrom(rest); err != nil {
			return nil, fmt.Errorf("decode key %d v%d: %w", key, version, err)
		}
		resp = b.answer(WithClient(ctx, clientID, cn.RemoteAddr().String()), req)
		if resp == nil {
			return nil, fmt.Errorf("unsupported api key %d", key)
		}
	}

	out := make([]byte, 4, 64)
	out = binary.BigEndian.AppendUint32(out, corr)
	// Response header v1 (a tag buffer) for flexible versions, except
	// ApiVersions, whose response header is always v0.
	if req.IsFlexible() && key != int16(kmsg.ApiVersions) {
		out = append(out, 0)
	}
	out = resp.AppendTo(out)
	binary.BigEndian.PutUint32(out, uint32(len(out)-4))
	return out, nil
}

// skipTags skips a tagged-field section.
func skipTags(b []byte) ([]byte, error) {
	n, used := binary.Uvarint(b)
	if used <= 0 {
		return nil, errors.New("bad tag count")
	}
	b = b[used:]
	for i := uint64(0); i < n; i++ {
		for j := 0; j < 2; j++ { // tag, then size
			v, used := binary.Uvarint(b)
			if used <= 0 {
				return nil, errors.New("bad tag")
			}
			b = b[used:]
			if j == 1 {
				if v > uint64(len(b)) {
					return nil, errors.New("short tag")
				}
				b = b[v:]
			}
		}
	}
	return b, nil
}

func (b *testBroker) answer(ctx context.Context, req kmsg.Request) kmsg.Response {
	switch r := req.(type) {
	case *kmsg.ApiVersionsRequest:
		return b.apiVersions(r)
	case *kmsg.MetadataRequest:
		return b.metadata(r)
	case *kmsg.FindCoordinatorRequest:
		return b.findCoordinator(r)
	case *kmsg.ListOffsetsRequest:
		return b.listOffsets(r)
	case *kmsg.FetchRequest:
		return b.fetch(ctx, r)
	case *kmsg.JoinGroupRequest:
		return b.c.JoinGroup(ctx, r)
	case *kmsg.SyncGroupRequest:
		return b.c.SyncGroup(ctx, r)
	case *kmsg.HeartbeatRequest:
		return b.c.Heartbeat(ctx, r)
	case *kmsg.LeaveGroupRequest:
		return b.c.LeaveGroup(ctx, r)
	case *kmsg.OffsetCommitRequest:
		return b.c.OffsetCommit(ctx, r)
	case *kmsg.OffsetFetchRequest:
		return b.c.OffsetFetch(ctx, r)
	case *kmsg.DescribeGroupsRequest:
		return b.c.DescribeGroups(ctx, r)
	case *kmsg.ListGroupsRequest:
		return b.c.ListGroups(ctx, r)
	}
	return nil
}

func (b *testBroker) apiVersions(req *kmsg.ApiVersionsRequest) *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	resp.Version = req.Version
	add := func(k kmsg.Key, lo, hi int16) {
		ak := kmsg.NewApiVersionsResponseApiKey()
		ak.ApiKey, ak.MinVersion, ak.MaxVersion = int16(k), lo, hi
		resp.ApiKeys = append(resp.ApiKeys, ak)
	}
	for k, r := range brokerVersions {
		add(k, r[0], r[1])
	}
	for _, k := range []kmsg.Key{kmsg.OffsetCommit, kmsg.OffsetFetch, kmsg.JoinGroup, kmsg.Heartbeat,
		kmsg.LeaveGroup, kmsg.SyncGroup, kmsg.DescribeGroups, kmsg.ListGroups} {
		lo, hi, _ := SupportedVersions(k)
		add(k, lo, hi)
	}
	return resp
}

func (b *testBroker) metadata(req *kmsg.MetadataRequest) *kmsg.MetadataResponse {
	resp := kmsg.NewPtrMetadataResponse()
	resp.Version = req.Version
	br := kmsg.NewMetadataResponseBroker()
	br.NodeID, br.Host, br.Port = 0, b.host, b.port
	resp.Brokers = append(resp.Brokers, br)
	resp.ClusterID = kmsg.StringPtr("groups-test")
	resp.ControllerID = 0

	names := []string{b.topic} // null topics: all of them
	if req.Topics != nil {
		names = names[:0]
		for _, t := range req.Topics {
			if t.Topic != nil {
				names = append(names, *t.Topic)
			}
		}
	}
	for _, name := range names {
		mt := kmsg.NewMetadataResponseTopic()
		mt.Topic = kmsg.StringPtr(name)
		mt.TopicID = testTopicID
		if name != b.topic {
			mt.ErrorCode = kerr.UnknownTopicOrPartition.Code
			resp.Topics = append(resp.Topics, mt)
			continue
		}
		for p := int32(0); p < b.partitions; p++ {
			mp := kmsg.NewMetadataResponseTopicPartition()
			mp.Partition, mp.Leader, mp.LeaderEpoch = p, 0, 0
			mp.Replicas, mp.ISR = []int32{0}, []int32{0}
			mt.Partitions = append(mt.Partitions, mp)
		}
		resp.Topics = append(resp.Topics, mt)
	}
	return resp
}

func (b *testBroker) findCoordinator(req *kmsg.FindCoordinatorRequest) *kmsg.FindCoordinatorResponse {
	resp := kmsg.NewPtrFindCoordinatorResponse()
	resp.Version = req.Version
	resp.NodeID, resp.Host, resp.Port = 0, b.host, b.port
	for _, k := range req.CoordinatorKeys { // v4+
		rc := kmsg.NewFindCoordinatorResponseCoordinator()
		rc.Key, rc.NodeID, rc.Host, rc.Port = k, 0, b.host, b.port
		resp.Coordinators = append(resp.Coordinators, rc)
	}
	return resp
}

func (b *testBroker) listOffsets(req *kmsg.ListOffsetsRequest) *kmsg.ListOffsetsResponse {
	resp := kmsg.NewPtrListOffsetsResponse()
	resp.Version = req.Version
	for _, t := range req.Topics {
		rt := kmsg.NewListOffsetsResponseTopic()
		rt.Topic = t.Topic
		for _, p := range t.Partitions {
			rp := kmsg.NewListOffsetsResponseTopicPartition()
			rp.Partition, rp.Offset, rp.Timestamp, rp.LeaderEpoch = p.Partition, 0, -1, 0
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp
}

// fetch has no records to give: it waits MaxWait, as a broker with
// MinBytes unmet does, and answers empty partitions.
func (b *testBroker) fetch(ctx context.Context, req *kmsg.FetchRequest) *kmsg.FetchResponse {
	t := time.NewTimer(time.Duration(req.MaxWaitMillis) * time.Millisecond)
	select {
	case <-t.C:
	case <-ctx.Done():
		t.Stop()
	}
	resp := kmsg.NewPtrFetchResponse()
	resp.Version = req.Version
	for _, rt := range req.Topics {
		ft := kmsg.NewFetchResponseTopic()
		ft.Topic = rt.Topic
		for _, rp := range rt.Partitions {
			fp := kmsg.NewFetchResponseTopicPartition()
			fp.Partition, fp.HighWatermark, fp.LastStableOffset, fp.LogStartOffset = rp.Partition, 0, 0, 0
			ft.Partitions = append(ft.Partitions, fp)
		}
		resp.Topics = append(resp.Topics, ft)
	}
	return resp
}
