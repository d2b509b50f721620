package groups

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// member is one consumer of a group, from its first successful JoinGroup
// until it leaves, is fenced, or its session expires.
type member struct {
	id         string
	instanceID *string // static membership (KIP-345), nil for dynamic members
	clientID   string
	clientHost string

	protocolType string
	protocols    []kmsg.JoinGroupRequestProtocol // in the member's preference order

	sessionTimeout   time.Duration
	rebalanceTimeout time.Duration
	// deadline is when the session expires. It is not applied while the
	// member waits in JoinGroup or SyncGroup: a blocked request is proof
	// of life, as in Kafka.
	deadline time.Time

	// joinWait and syncWait are set while a JoinGroup or SyncGroup of this
	// member is blocked; the coordinator sends exactly one response into
	// the 1-slot channel and clears the field.
	joinWait    chan *kmsg.JoinGroupResponse
	joinVersion int16
	syncWait    chan *kmsg.SyncGroupResponse
	syncVersion int16

	assignment []byte // from the leader's SyncGroup of this generation
}

func (m *member) awaiting() bool { return m.joinWait != nil || m.syncWait != nil }

func (m *member) heartbeat(now time.Time) { m.deadline = now.Add(m.sessionTimeout) }

// metadata returns the member's metadata for protocol name.
func (m *member) metadata(name string) []byte {
	for _, p := range m.protocols {
		if p.Name == name {
			return p.Metadata
		}
	}
	return nil
}

// sameProtocols reports whether a join carries exactly the protocols the
// member joined with; only then may a rejoin skip a rebalance.
func (m *member) sameProtocols(protocolType string, ps []kmsg.JoinGroupRequestProtocol) bool {
	if m.protocolType != protocolType || len(m.protocols) != len(ps) {
		return false
	}
	for i := range ps {
		if m.protocols[i].Name != ps[i].Name || !bytes.Equal(m.protocols[i].Metadata, ps[i].Metadata) {
			return false
		}
	}
	return true
}

// setJoin records what a JoinGroup says about the member. The protocol
// metadata is copied because request buffers may be reused by the caller.
func (m *member) setJoin(req *kmsg.JoinGroupRequest, ci clientInfo, session, rebalance time.Duration) {
	m.protocolType = req.ProtocolType
	m.protocols = make([]kmsg.JoinGroupRequestProtocol, len(req.Protocols))
	for i, p := range req.Protocols {
		m.protocols[i] = kmsg.JoinGroupRequestProtocol{Name: p.Name, Metadata: bytes.Clone(p.Metadata)}
	}
	m.sessionTimeout = session
	m.rebalanceTimeout = rebalance
	m.clientID = ci.id
	m.clientHost = ci.host
}

// newMemberID builds a member id as Kafka does: the client id (or the
// group instance id of a static member) and a random UUID.
func newMemberID(clientID string, instanceID *string) string {
	prefix := clientID
	if instanceID != nil {
		prefix = *instanceID
	}
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24+)
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return prefix + "-" + h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
