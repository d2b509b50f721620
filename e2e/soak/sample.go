package main

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/lakegw/lakegw/e2e/internal/procs"
	"github.com/lakegw/lakegw/lake"
)

// sample is the state of the soak at one moment of the writing phase.
type sample struct {
	at      time.Time
	commits int64 // every writer's, together
	// perWriter is each writer's commits, in the writers' order.
	perWriter []int64
	// allWriting is true while no writer has finished its commits.
	allWriting bool
	cpu        float64
	rss        int64
	// metaJSON is the newest metadata.json of each table, by topic;
	// metaDirs the bytes of every table's metadata/ together; disk the
	// bytes of the whole data directory.
	metaJSON map[string]int64
	metaDirs int64
	disk     int64
}

// sampler records samples every interval until its context ends, and
// cancels the run when the data directory outgrows maxDisk (a soak of a
// build without maintenance grows quadratically).
type sampler struct {
	mu      sync.Mutex
	samples []sample
}

func (s *sampler) run(ctx context.Context, every time.Duration, g *procs.Proc, dataDir string, metaDirs map[string]string,
	writers []*writer, maxDisk int64, abort context.CancelCauseFunc) {
	t := time.NewTicker(every)
	defer t.Stop()
	// The directory walks are the sampler's own cost, and it must not grow
	// with the run: walking the batch cache and the foreign table's files
	// (both grow by design) every tick took a fifth of a core by the end
	// of a 4,000-commit run, CPU taken from the writers and the gateway
	// being measured. Only what the bounds are about is walked, and only
	// every walkEvery ticks; the samples in between carry the last walk.
	const walkEvery = 4
	foreignTopic := lake.TopicName(foreignIdent)
	skip := map[string]bool{filepath.Join(dataDir, "batch-cache"): true}
	if dir, ok := metaDirs[foreignTopic]; ok {
		skip[filepath.Dir(dir)] = true
	}
	var (
		walkedJSON             map[string]int64
		walkedMeta, walkedDisk int64
	)
	for tick := 0; ; tick++ {
		rss, _ := procs.MemStat(g.Pid())
		x := sample{at: time.Now(), cpu: procs.CPUSeconds(g.Pid()), rss: rss, allWriting: true}
		for _, w := range writers {
			n := w.commits.Load()
			x.perWriter = append(x.perWriter, n)
			x.commits += n
			x.allWriting = x.allWriting && !w.finished.Load()
		}
		if tick%walkEvery == 0 {
			// The bounds are lakegw's: its tables and its own files. The
			// foreign table grows as its writer lets it, and the batch
			// cache is a cache, bounded by --disk-cache-bytes. Each walk
			// makes a new map: the samples before it keep theirs.
			walkedJSON, walkedMeta = map[string]int64{}, 0
			for topic, dir := range metaDirs {
				walkedJSON[topic] = newestMetadata(dir)
				if topic != foreignTopic {
					walkedMeta += dirBytes(dir, nil)
				}
			}
			walkedDisk = dirBytes(dataDir, skip)
		}
		x.metaJSON, x.metaDirs, x.disk = walkedJSON, walkedMeta, walkedDisk
		s.mu.Lock()
		s.samples = append(s.samples, x)
		s.mu.Unlock()
		if maxDisk > 0 && x.disk > maxDisk {
			abort(fmt.Errorf("the data directory holds %d bytes, more than -max-disk %d: stopped", x.disk, maxDisk))
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (s *sampler) all() []sample {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]sample(nil), s.samples...)
}

// metadataDir is the local metadata/ directory of a table whose metadata
// file is at location (a file:// URL or a path).
func metadataDir(location string) string {
	if len(location) > 7 && location[:7] == "file://" {
		location = location[7:]
	}
	return filepath.Dir(location)
}
