package protocol

import (
	"context"
	"errors"
	"fmt"
	"github.com/lakegw/lakegw/cluster"
	"net"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"
	"golang.org/x/sync/semaphore"

	"github.com/lakegw/lakegw/fetch"
	"github.com/lakegw/lakegw/internal/limitedlog"
	"github.com/lakegw/lakegw/produce"
	"github.com/lakegw/lakegw/protocol/groups"
	"github.com/lakegw/lakegw/topics"
	"github.com/lakegw/lakegw/txn"
)

// Config configures the Kafka listener.
type Config struct {
	// Listen is the host:port to listen on.
	Listen string
	// NodeID is this gateway's Kafka node id, unique among the gateways
	// sharing a state store (0 for a lone one).
	NodeID int32
	// Advertised is the host:port clients are told to connect to; the
	// listener's address when empty.
	Advertised string
	// MaxRequestBytes bounds one request frame; larger frames close the
	// connection (as Kafka's socket.request.max.bytes does).
	MaxRequestBytes int32
	// MaxInflightPerConn bounds the requests of one connection being
	// handled at once (responses still go out in request order).
	MaxInflightPerConn int
	// ClusterID is reported in Metadata and DescribeCluster.
	ClusterID string
	// MaxInflightBytes bounds the request frames being decoded and handled
	// across all connections: kmsg decoding allocates a multiple of a
	// frame's size, so this keeps hostile clients from exhausting memory.
	MaxInflightBytes int64
	// WriteTimeout bounds the writing of one response: a client that
	// stops reading is disconnected rather than holding the response (and
	// the disk cache files it refers to) forever.
	WriteTimeout time.Duration
	// Pins says what holds a topic's history (DescribeConfigs'
	// lakegw.pinned-by); nil leaves that entry out.
	Pins PinReporter
	// MaxConnections bounds the open client connections (Kafka's
	// max.connections); connections past it are closed at once. 0: the
	// open-file limit less a reserve for the gateway's own files
	// (defaultMaxConnections); negative: unlimited.
	MaxConnections int
	// MaxConnectionsPerIP bounds the open connections from one client
	// address (Kafka's max.connections.per.ip); 0 or less: unlimited.
	MaxConnectionsPerIP int
	// ConnectionsMaxIdle closes a connection that sent nothing for this
	// long with no request in flight (Kafka's connections.max.idle.ms).
	// 0: DefaultConnectionsMaxIdle; negative: never.
	ConnectionsMaxIdle time.Duration
	// FrameReadTimeout bounds the reading of one request frame from its
	// first byte. 0: DefaultFrameReadTimeout; negative: unbounded.
	FrameReadTimeout time.Duration
	// AllowDeleteTopics lets DeleteTopics drop the tables of raw and
	// table topics (Kafka's delete.topic.enable; off by default here).
	AllowDeleteTopics bool
}

// Defaults of Config, as Kafka's where Kafka has the setting.
const (
	// DefaultMaxRequestBytes: Kafka's socket.request.max.bytes is 100 MiB;
	// a produce request of 1 MiB batches (the producers' default size) to
	// up to 32 partitions fits in this, and a request must fit in
	// DefaultMaxInflightBytes.
	DefaultMaxRequestBytes = 32 << 20
	// DefaultMaxInflightBytes plays Kafka's queued.max.request.bytes
	// (unbounded by default there).
	DefaultMaxInflightBytes = 64 << 20
	// DefaultConnectionsMaxIdle is Kafka's connections.max.idle.ms.
	DefaultConnectionsMaxIdle = 10 * time.Minute
	// DefaultFrameReadTimeout has no Kafka analog: a client on a working
	// link sends a frame of DefaultMaxRequestBytes well within it.
	DefaultFrameReadTimeout = 30 * time.Second
)

// Server is the Kafka protocol server.
type Server struct {
	cfg    Config
	reg    *topics.Registry
	reader *fetch.Reader
	groups *groups.Coordinator
	log    zerolog.Logger

	ln         net.Listener
	advertHost string
	members    *cluster.Membership // set by Listen (a cluster of one) or UseMembership

	// writesMu guards the handover of written tables (WritesFrom).
	writesMu          sync.Mutex
	prevView, curView *cluster.View
	writesFrom        time.Time
	advertPort        int32

	mu    sync.Mutex
	conns map[*conn]struct{}
	wg    sync.WaitGroup

	inflight *semaphore.Weighted
	// ownTurn holds the API keys handled in their connection's turn
	// (see conn): those whose answer's size does not follow from the
	// request's, so that unread answers of them cannot pile up.
	ownTurn    map[int16]bool
	limits     *connLimits
	clientErrs *limitedlog.Log
	// produce takes produced records (nil: every topic is read-only).
	produce *produce.Service
	// txn coordinates transactions (nil: transactional producers are
	// refused).
	txn *txn.Coordinator
}

// AcceptWrites has the server take Produce, InitProducerId and
// CreateTopics through p; call it before Serve. Without it every topic is
// read-only.
func (s *Server) AcceptWrites(p *produce.Service) { s.produce = p }

// AcceptTransactions has the server coordinate transactions through t
// (which commits through the Service given to AcceptWrites); call it
// before Serve. Without it transactional producers are refused.
func (s *Server) AcceptTransactions(t *txn.Coordinator) { s.txn = t }

// NewServer returns a server; call Listen then Serve.
func NewServer(cfg Config, reg *topics.Registry, reader *fetch.Reader, coord *groups.Coordinator, log zerolog.Logger) *Server {
	if cfg.MaxRequestBytes <= 0 {
		cfg.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if cfg.MaxInflightBytes <= 0 {
		cfg.MaxInflightBytes = DefaultMaxInflightBytes
	}
	if cfg.MaxConnections == 0 {
		cfg.MaxConnections = defaultMaxConnections()
	}
	if cfg.ConnectionsMaxIdle == 0 {
		cfg.ConnectionsMaxIdle = DefaultConnectionsMaxIdle
	}
	if cfg.FrameReadTimeout == 0 {
		cfg.FrameReadTimeout = DefaultFrameReadTimeout
	}
	if cfg.MaxInflightPerConn <= 0 {
		cfg.MaxInflightPerConn = 16
	}
	if cfg.ClusterID == "" {
		cfg.ClusterID = "lakegw"
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 2 * time.Minute
	}
	return &Server{cfg: cfg, reg: reg, reader: reader, groups: coord, log: log, conns: map[*conn]struct{}{},
		inflight: semaphore.NewWeighted(max(cfg.MaxInflightBytes, int64(cfg.MaxRequestBytes))), ownTurn: ownTurnKeys(),
		limits:     newConnLimits(max(cfg.MaxConnections, 0), max(cfg.MaxConnectionsPerIP, 0)),
		clientErrs: limitedlog.New(time.Second)}
}

// ownTurnKeys are the APIs handled in their connection's turn: their
// answers grow with what the gateway holds, not with the request (a
// Fetch's records, the Metadata of every topic, OffsetFetch of a group's
// every partition, DescribeGroups' members, ListGroups' groups). Other
// answers are a small multiple of their request, whose bytes the
// server-wide budget holds until the answer is written, so those run
// side by side: a pipelining client's JoinGroups and OffsetCommits are
// not queued behind one another.
func ownTurnKeys() map[int16]bool {
	return map[int16]bool{
		kmsg.Fetch.Int16(): true, kmsg.Metadata.Int16(): true, kmsg.OffsetFetch.Int16(): true,
		kmsg.DescribeGroups.Int16(): true, kmsg.ListGroups.Int16(): true,
	}
}

// Listen binds the listener.
func (s *Server) Listen() error {
	ln, err := net.Listen("tcp", s.cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", s.cfg.Listen, err)
	}
	s.ln = ln
	adv := s.cfg.Advertised
	if adv == "" {
		adv = ln.Addr().String()
	}
	host, port, err := splitHostPort(adv)
	if err != nil {
		ln.Close()
		return fmt.Errorf("advertised address %q: %w", adv, err)
	}
	s.advertHost, s.advertPort = host, port
	if s.members == nil {
		s.members = cluster.Single(s.Self())
	}
	return nil
}

// Addr is the bound listener address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve accepts connections until ctx is done, then closes every
// connection and waits for their goroutines. A failed accept (out of file
// descriptors) is retried after a growing pause, as net/http's Server
// does, rather than end the gateway.
func (s *Server) Serve(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() { s.ln.Close() })
	defer stop()
	defer s.closeAll()
	var pause time.Duration
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			if !isTemporary(err) {
				return fmt.Errorf("accept: %w", err)
			}
			pause = acceptPause(pause)
			s.clientErrs.Warn(s.log, acceptFailed).Err(err).Dur("retry_in", pause).Msg(acceptFailed)
			select {
			case <-time.After(pause):
			case <-ctx.Done():
				return nil
			}
			continue
		}
		pause = 0
		s.start(ctx, nc)
	}
}

// acceptFailed is the log line (and limitedlog kind) of a failed accept.
const acceptFailed = "accepting a connection failed; retrying"

// acceptPause is the pause after a failed accept that followed one of
// last: 5 ms doubling up to 1 s, as net/http's Server waits.
func acceptPause(last time.Duration) time.Duration {
	if last == 0 {
		return 5 * time.Millisecond
	}
	return min(2*last, time.Second)
}

// isTemporary says whether an accept error may pass (EMFILE, ENFILE,
// ECONNABORTED...), as net/http decides it.
func isTemporary(err error) bool {
	var te interface{ Temporary() bool }
	return errors.As(err, &te) && te.Temporary()
}

// start serves nc in a goroutine of its own, or closes it at once when a
// connection limit is reached.
func (s *Server) start(ctx context.Context, nc net.Conn) {
	c := newConn(s, nc)
	if refused := s.limits.admit(c.host); refused != "" {
		nc.Close()
		s.clientErrs.Warn(c.log, refused).Int("max_connections", s.cfg.MaxConnections).
			Int("max_connections_per_ip", s.cfg.MaxConnectionsPerIP).Msg(refused)
		return
	}
	s.mu.Lock()
	s.conns[c] = struct{}{}
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		defer s.limits.leave(c.host)
		c.serve(ctx)
		s.mu.Lock()
		delete(s.conns, c)
		s.mu.Unlock()
	}()
}

func (s *Server) closeAll() {
	s.mu.Lock()
	for c := range s.conns {
		c.nc.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}
