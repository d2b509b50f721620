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
// and the working set: as much as GOGC=100 gives the working set, and none
// for the caches, which are mostly byte slices the collector does not
// scan, filled once and kept. A limit close to the live heap makes the
// collector run without pause, capped at half the CPU, and the
// allocating goroutines assist it: at 128 MiB over the caches, deriving
// 250,000-record snapshots spent a third of the gateway's CPU in GC; a
// 4,000-commit soak with maintenance, whose heap reached caches + 192 MiB
// once its caches were full, spent half of it there by the end; with
// 128 MiB of room, the background collector and its assists took 59 % of
// the gateway's CPU fifty minutes into a 20,000-commit soak. With this
// room the 4,000-commit soak's collector went from 1.7 to 4.2 CPU seconds
// in 30 s, and its RSS peaked at 1.94 times the first minutes'.
const gcHeadroom = workingSet

// setMemoryLimit tells the Go runtime how much memory the gateway is meant
// to use (its caches, its working set and room to collect it), so that
// full caches are not doubled in RSS, as GOGC=100 alone would. An
// operator's GOMEMLIMIT wins.
func setMemoryLimit(cacheBytes int64, log zerolog.Logger) {
	if _, ok := os.LookupEnv("GOMEMLIMIT"); ok {
		return
	}
	limit := cacheBytes + workingSet + gcHeadroom
	debug.SetMemoryLimit(limit)
	log.Debug().Int64("bytes", limit).Msg("memory limit set from the cache sizes")
}
