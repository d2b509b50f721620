package main

import (
	"os"
	"runtime/debug"

	"github.com/rs/zerolog"
)

// memoryOverCaches is what the gateway's resident memory may reach beyond
// its memory caches (the batch tier and the changes cache): the bound the
// benchmark checks with 100 consumers (issue 6, `RSS <= caches + 256 MiB`).
// It holds the working set (the Go runtime, connections, response buffers,
// the catalog and state store, the snapshot being derived and the row
// groups cached for the next ones' before-images, a maintenance pass and
// its manifest cache) and the collector's room.
const memoryOverCaches = 256 << 20

// mappedOutsideLimit is resident memory the Go memory limit does not
// govern, mostly the pages of the executable itself (a 100 MB binary: 57
// MiB resident in a soak). A warm gateway fills its limit: with 48 MiB
// here, `make bench`'s 100 consumers peaked at 448 MiB for a bound of 448.
const mappedOutsideLimit = 64 << 20

// setMemoryLimit gives the gateway a memory budget of a known size, as a
// JVM's -Xmx does a Kafka broker: its caches and 256 MiB. The collector
// runs when the heap reaches the Go memory limit, not whenever it has
// doubled (GOGC=100): a streaming gateway allocates fast (table metadata
// and manifests parsed at every commit) over a small live heap, and with
// GOGC=100 it collected a hundred times a minute, 40 % of its CPU in a
// 20,000-commit soak, growing with the live heap as the caches filled. An
// operator's GOMEMLIMIT or GOGC wins: with GOGC alone the collector paces
// by it under the same limit.
func setMemoryLimit(cacheBytes int64, log zerolog.Logger) {
	if _, ok := os.LookupEnv("GOMEMLIMIT"); ok {
		return
	}
	limit := cacheBytes + memoryOverCaches - mappedOutsideLimit
	debug.SetMemoryLimit(limit)
	if _, ok := os.LookupEnv("GOGC"); !ok {
		debug.SetGCPercent(-1)
	}
	log.Debug().Int64("bytes", limit).Msg("memory limit set from the cache sizes")
}
