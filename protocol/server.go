package protocol

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/sync/semaphore"

	"github.com/lakegw/lakegw/fetch"
	"github.com/lakegw/lakegw/protocol/groups"
	"github.com/lakegw/lakegw/topics"
)

// Config configures the Kafka listener.
type Config struct {
	// Listen is the host:port to listen on.
	Listen string
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
}

// Server is the Kafka protocol server.
type Server struct {
	cfg    Config
	reg    *topics.Registry
	reader *fetch.Reader
	groups *groups.Coordinator
	log    zerolog.Logger

	ln         net.Listener
	advertHost string
	advertPort int32

	mu    sync.Mutex
	conns map[*conn]struct{}
	wg    sync.WaitGroup

	inflight *semaphore.Weighted
}

// NewServer returns a server; call Listen then Serve.
func NewServer(cfg Config, reg *topics.Registry, reader *fetch.Reader, coord *groups.Coordinator, log zerolog.Logger) *Server {
	if cfg.MaxRequestBytes <= 0 {
		cfg.MaxRequestBytes = 8 << 20
	}
	if cfg.MaxInflightBytes <= 0 {
		cfg.MaxInflightBytes = 64 << 20
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
		inflight: semaphore.NewWeighted(max(cfg.MaxInflightBytes, int64(cfg.MaxRequestBytes)))}
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
	return nil
}

// Addr is the bound listener address.
func (s *Server) Addr() net.Addr { return s.ln.Addr() }

// Serve accepts connections until ctx is done, then closes every
// connection and waits for their goroutines.
func (s *Server) Serve(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() { s.ln.Close() })
	defer stop()
	defer s.closeAll()
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			if ctx.Err() != nil || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return fmt.Errorf("accept: %w", err)
		}
		c := newConn(s, nc)
		s.mu.Lock()
		s.conns[c] = struct{}{}
		s.mu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			c.serve(ctx)
			s.mu.Lock()
			delete(s.conns, c)
			s.mu.Unlock()
		}()
	}
}

func (s *Server) closeAll() {
	s.mu.Lock()
	for c := range s.conns {
		c.nc.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
}
