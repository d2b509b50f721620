package main

import (
	"flag"
	"time"

	"github.com/lakegw/lakegw/protocol"
)

// netLimitFlags are serve's bounds on what clients may hold of the Kafka
// listener: connections, idle time, request memory and frame read time.
type netLimitFlags struct {
	maxConnections      *int
	maxConnectionsPerIP *int
	connectionsMaxIdle  *time.Duration
	frameReadTimeout    *time.Duration
	queuedRequestBytes  *int64
}

func addNetLimitFlags(fs *flag.FlagSet) *netLimitFlags {
	return &netLimitFlags{
		maxConnections: fs.Int("max-connections", 0,
			"most client connections open at once, as Kafka's max.connections; connections past it are closed at once "+
				"(0: the open-file limit less min(1024, half of it), kept for the gateway's own files; negative: unlimited)"),
		maxConnectionsPerIP: fs.Int("max-connections-per-ip", 0,
			"most connections open at once from one client address, as Kafka's max.connections.per.ip; "+
				"connections past it are closed at once (0: unlimited, Kafka's default)"),
		connectionsMaxIdle: fs.Duration("connections-max-idle", protocol.DefaultConnectionsMaxIdle,
			"close a connection that sent nothing for this long with no request in flight, as Kafka's connections.max.idle.ms (0: never)"),
		frameReadTimeout: fs.Duration("frame-read-timeout", protocol.DefaultFrameReadTimeout,
			"once a request frame's first byte is in, the whole frame must arrive within this or the connection is closed (0: no bound)"),
		queuedRequestBytes: fs.Int64("queued-max-request-bytes", protocol.DefaultMaxInflightBytes,
			"request memory of all connections together, taken as request bytes arrive and given back once the request is handled, "+
				"as Kafka's queued.max.request.bytes; readers wait beyond it"),
	}
}

// apply sets the limits in cfg, mapping the flags' "0: off" to Config's
// negative values (its zero means the default).
func (f *netLimitFlags) apply(cfg *protocol.Config) {
	cfg.MaxConnections = *f.maxConnections
	cfg.MaxConnectionsPerIP = *f.maxConnectionsPerIP
	cfg.ConnectionsMaxIdle = offWhenZero(*f.connectionsMaxIdle)
	cfg.FrameReadTimeout = offWhenZero(*f.frameReadTimeout)
	cfg.MaxInflightBytes = *f.queuedRequestBytes
}

func offWhenZero(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}
