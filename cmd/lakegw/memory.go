package main

import (
	"os"
	"runtime/debug"

	"github.com/rs/zerolog"
)

// fixedOverhead is what the gateway needs besides its caches: the Go
// runtime, connections, response buffers, catalog and state store, and the
// snapshot being derived (the changes cache bounds those derived before).
// A limit at or below the live heap makes the collector run without pause:
// at 128 MiB, deriving 250,000-record snapshots spent a third of the
// gateway's CPU in GC.
const fixedOverhead = 192 << 20

// setMemoryLimit tells the Go runtime how much memory the gateway is meant
// to use (its caches plus a fixed overhead), so that the heap is collected
// before RSS grows to twice the live data, as it would by default. An
// operator's GOMEMLIMIT wins.
func setMemoryLimit(cacheBytes int64, log zerolog.Logger) {
	if _, ok := os.LookupEnv("GOMEMLIMIT"); ok {
		return
	}
	limit := cacheBytes + fixedOverhead
	debug.SetMemoryLimit(limit)
	log.Debug().Int64("bytes", limit).Msg("memory limit set from the cache sizes")
}
