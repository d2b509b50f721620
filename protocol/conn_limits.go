package protocol

import (
	"sync"
	"syscall"
)

// connLimits admits connections within max.connections and
// max.connections.per.ip, as a Kafka broker does; the server closes the
// others at once.
type connLimits struct {
	max, perIP int // 0: unlimited

	mu    sync.Mutex
	total int
	byIP  map[string]int
}

func newConnLimits(max, perIP int) *connLimits {
	return &connLimits{max: max, perIP: perIP, byIP: map[string]int{}}
}

// admit takes a place for a connection from ip, or says which limit is
// reached ("" when admitted).
func (l *connLimits) admit(ip string) (refused string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.max > 0 && l.total >= l.max {
		return refusedMaxConnections
	}
	if l.perIP > 0 && l.byIP[ip] >= l.perIP {
		return refusedMaxConnectionsPerIP
	}
	l.total++
	l.byIP[ip]++
	return ""
}

// leave gives back the place of a connection from ip.
func (l *connLimits) leave(ip string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total--
	if l.byIP[ip]--; l.byIP[ip] <= 0 {
		delete(l.byIP, ip)
	}
}

// The log lines (and kinds of limitedlog) of a refused connection.
const (
	refusedMaxConnections      = "closing connection: connection limit reached (--max-connections)"
	refusedMaxConnectionsPerIP = "closing connection: connection limit per client ip reached (--max-connections-per-ip)"
)

// defaultMaxConnections is the connection limit when none is configured:
// the process's open-file limit less what the gateway keeps for its own
// files (state store, caches, table files), so that clients alone cannot
// run it out of descriptors, and at most maxDefaultConnections. The
// limit the process starts with may be a million (Go raises the soft
// limit to the hard one): at up to 64 KiB of buffers a connection that is
// 64 GiB, so the default also bounds memory.
func defaultMaxConnections() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil || rl.Cur == 0 || rl.Cur > 1<<30 {
		return maxDefaultConnections
	}
	n := int(rl.Cur)
	return min(n-min(1024, n/2), maxDefaultConnections)
}

// maxDefaultConnections bounds the default connection limit: 20,000
// connections hold at most about 1.25 GiB of connection buffers.
const maxDefaultConnections = 20000
