package topics

import (
	"context"
	"fmt"
	"time"
)

// servedPoll is how often AwaitServed looks again without being woken: for
// a topic this gateway does not serve yet (a table just created: the
// registry lists it within a moment, Relist) or one whose Topic was
// replaced meanwhile (a reopened topic). An index that grows wakes it
// through Changed.
const servedPoll = 10 * time.Millisecond

// AwaitServed returns once topic name is served with every partition p's
// high watermark at ends[p] or past it, or with ctx's error: a producer's
// acknowledgement waits for it, so that what it wrote can be read at once.
func (r *Registry) AwaitServed(ctx context.Context, name string, ends []int64) error {
	poll := time.NewTicker(servedPoll)
	defer poll.Stop()
	for {
		var changed <-chan struct{}
		if t, ok := r.Topic(name); ok {
			changed = t.Changed()
			if servedUpTo(t, ends) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("topic %s not served up to %v: %w", name, ends, context.Cause(ctx))
		case <-changed:
		case <-poll.C:
		}
	}
}

// servedUpTo reports whether every partition of t has its high watermark at
// or past ends (a partition t does not have counts as not served).
func servedUpTo(t *Topic, ends []int64) bool {
	if len(ends) > int(t.Index.Partitions()) {
		return false
	}
	for p, end := range ends {
		if t.Index.HighWatermark(int32(p)) < end {
			return false
		}
	}
	return true
}
