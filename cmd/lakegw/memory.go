package main

import (
	"os"
	"runtime/debug"

	"github.com/rs/zerolog"
)

// workingSet is what the gateway needs besides its caches: the Go runtime,
// connections, response buffers, catalog and state store, the snapshot
// being derived (the changes cache bounds those derived before), and a
// maintenance pass (a compaction's readers, the manifests it merges, the
// table state a compacted prefix is read from).
const workingSet = 192 << 20

// gcHeadroom is the room the limit leaves the collector above the caches
// and the working set, which are mostly byte slices the collector does not
// scan, filled once and kept. A limit close to the live heap makes the
// collector run without pause, capped at half the CPU, and the
// allocating goroutines assist it: at 128 MiB over the caches, deriving
// 250,000-record snapshots spent a third of the gateway's CPU in GC; with
// 128 MiB of room, the background collector and its assists took 59 % of
// the gateway's CPU fifty minutes into a 20,000-commit soak.
const gcHeadroom = workingSet

// setMemoryLimit gives the gateway a heap of a known size, as a JVM's
// -Xmx does a Kafka broker: its caches, its working set and room to
// collect. The collector runs when the heap reaches that limit, not
// whenever it has doubled (GOGC=100): a streaming gateway allocates fast
// (table metadata and manifests parsed at every commit) over a small live
// heap, and with GOGC=100 it collected a hundred times a minute, 40 % of
// its CPU in a 20,000-commit soak, growing with the live heap as the
// caches filled. An operator's GOMEMLIMIT or GOGC wins: with GOGC alone
// the collector paces by it under the same limit.
func setMemoryLimit(cacheBytes int64, log zerolog.Logger) {
	if _, ok := os.LookupEnv("GOMEMLIMIT"); ok {
		return
	}
	limit := cacheBytes + workingSet + gcHeadroom
	debug.SetMemoryLimit(limit)
	if _, ok := os.LookupEnv("GOGC"); !ok {
		debug.SetGCPercent(-1)
	}
	log.Debug().Int64("bytes", limit).Msg("memory limit set from the cache sizes")
}
