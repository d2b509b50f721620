package maintain

import (
	"context"
	"sync"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/lake"
)

// DeferredRemovals holds the files a writer's commits stopped referencing
// (HistoryCap.Clean) for a grace period before they are removed: an
// engine that planned a scan on a snapshot a few seconds old (a raw topic
// keeps only its newest 64, a few seconds at full rate) still finds its
// manifests and data files, as it would under a maintenance pass's expiry
// that keeps days. Held in memory by the writer and bounded: past Max
// paths the oldest go early; files a stopped or crashed writer still held
// are unreferenced, and orphan cleanup removes them.
type DeferredRemovals struct {
	// Grace is how long a file stays after its last snapshot expired.
	Grace time.Duration
	// Max bounds the paths held (default 100,000).
	Max int

	mu sync.Mutex
	// pending[head:] are held, oldest first; the slice is compacted only
	// once head passes half of it, so a commit costs what it adds and
	// removes, not what is held.
	pending []deferredFile
	head    int
}

type deferredFile struct {
	path  string
	since time.Time
}

// DefaultRemovalGrace is the grace a gateway gives the files of expired
// snapshots (its raw topics' writers and its maintenance passes): far
// longer than planning a scan takes, short enough that what a compaction
// replaced is gone within minutes.
const DefaultRemovalGrace = 10 * time.Minute

// defaultMaxDeferred bounds DeferredRemovals when Max is not set: a day
// of manifest lists at a commit a second, or a few compaction passes'
// small files.
const defaultMaxDeferred = 100_000

// hold adds paths, unreferenced since now, and returns the paths whose
// grace has run out (or that the bound pushes out), oldest first.
func (d *DeferredRemovals) hold(paths []string, now time.Time) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, p := range paths {
		d.pending = append(d.pending, deferredFile{path: p, since: now})
	}
	limit := d.Max
	if limit <= 0 {
		limit = defaultMaxDeferred
	}
	var due []string
	for d.head < len(d.pending) && (len(d.pending)-d.head > limit || now.Sub(d.pending[d.head].since) >= d.Grace) {
		due = append(due, d.pending[d.head].path)
		d.pending[d.head] = deferredFile{}
		d.head++
	}
	if d.head > len(d.pending)/2 {
		d.pending = append(d.pending[:0], d.pending[d.head:]...)
		d.head = 0
	}
	return due
}

// remove removes files of tbl that expired snapshots alone referenced: at
// once when d is nil, else after d's grace (the held files whose grace ran
// out go now). It returns how many it removed.
func (d *DeferredRemovals) remove(ctx context.Context, tbl *table.Table, files []string) (int, error) {
	if d != nil {
		files = d.hold(files, time.Now())
	}
	if len(files) == 0 {
		return 0, nil
	}
	return lake.RemoveFiles(ctx, tbl, files)
}

// held returns the paths held (by pathKey), for orphan cleanup to keep;
// nil for a nil d.
func (d *DeferredRemovals) held() map[string]bool {
	if d == nil {
		return nil
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[string]bool, len(d.pending)-d.head)
	for _, f := range d.pending[d.head:] {
		out[pathKey(f.path)] = true
	}
	return out
}

// Len is how many files are held.
func (d *DeferredRemovals) Len() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.pending) - d.head
}
