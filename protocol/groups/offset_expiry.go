package groups

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Offset retention, as Kafka 2.1+ (KIP-211) does it: while a group has
// members its offsets are kept; once it is empty (or never had members:
// assign() users that only commit, such as Flink's KafkaSource), its
// offsets are removed when neither a commit nor the last member's leaving
// happened within OffsetsRetention. Committed offsets pin the table
// history they point into, so a group nobody will resume must stop doing
// so.

// runOffsetExpiry removes expired offsets every OffsetsRetentionCheck
// until Close. It is the coordinator's second goroutine: store writes must
// not delay the timer loop that expires sessions.
func (c *Coordinator) runOffsetExpiry() {
	defer close(c.expiryDone)
	if c.opts.OffsetsRetention < 0 {
		<-c.quit
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// Close ends a store call in flight rather than waiting for it.
		select {
		case <-c.quit:
			cancel()
		case <-ctx.Done():
		}
	}()
	t := time.NewTicker(c.opts.OffsetsRetentionCheck)
	defer t.Stop()
	for {
		select {
		case <-c.quit:
			return
		case <-t.C:
		}
		if c.status.Load() != statusReady {
			continue
		}
		expired, err := c.ExpireOffsets(ctx)
		if err != nil && ctx.Err() == nil {
			c.log.Warn().Err(err).Msg("offset expiry failed; retried at the next check")
		}
		if len(expired) > 0 {
			c.log.Info().Strs("groups", expired).Dur("retention", c.opts.OffsetsRetention).
				Msg("committed offsets of empty groups expired")
		}
	}
}

// ExpireOffsets removes, from the store and then from memory, the
// committed offsets of every group that has been empty without a commit
// for longer than OffsetsRetention (by Options.Now), and returns the
// groups it emptied. The coordinator calls it every
// OffsetsRetentionCheck; it is exported for tools and tests. A group that
// fails to be removed keeps its offsets and is tried again next time.
func (c *Coordinator) ExpireOffsets(ctx context.Context) ([]string, error) {
	if c.opts.OffsetsRetention < 0 {
		return nil, nil
	}
	if code := c.statusCode(); code != 0 {
		return nil, fmt.Errorf("offset expiry: coordinator is not serving")
	}
	cutoff := c.opts.Now().Add(-c.opts.OffsetsRetention).UnixMilli()
	var expired []string
	var errs []error
	for _, name := range c.offsets.entryNames() {
		ok, err := c.expireGroup(ctx, name, cutoff)
		if err != nil {
			errs = append(errs, err)
			if ctx.Err() != nil {
				break
			}
			continue
		}
		if ok {
			expired = append(expired, name)
		}
	}
	return expired, errors.Join(errs...)
}

// expireGroup removes the group's offsets if it is empty and was last
// active before cutoff. It holds the group's commit semaphore throughout,
// so no commit lands between the check and the removal.
func (c *Coordinator) expireGroup(ctx context.Context, name string, cutoff int64) (bool, error) {
	if c.ownershipCode(name) != 0 {
		// Another gateway coordinates it (or it is being taken over):
		// its offsets here may be stale, and are not this one's to drop.
		return false, nil
	}
	g, err := c.offsets.acquire(ctx, name, false)
	if err != nil {
		return false, fmt.Errorf("expire offsets of group %q: %w", name, err)
	}
	if g == nil {
		return false, nil // gone since it was listed
	}
	defer func() { <-g.sem }()

	c.offsets.mu.Lock()
	if len(g.parts) == 0 {
		// Left behind by a commit whose save failed: nothing to keep.
		delete(c.offsets.groups, name)
	}
	due := len(g.parts) > 0 && g.lastActiveMs() < cutoff
	c.offsets.mu.Unlock()
	if !due {
		return false, nil
	}
	c.mu.Lock()
	gr := c.groups[name]
	busy := gr != nil && !gr.empty()
	c.mu.Unlock()
	if busy {
		return false, nil
	}
	if c.store != nil {
		if err := c.store.DeleteGroupOffsets(ctx, name); err != nil {
			return false, fmt.Errorf("expire offsets of group %q: %w", name, err)
		}
	}
	c.offsets.mu.Lock()
	delete(c.offsets.groups, name)
	c.offsets.mu.Unlock()

	c.mu.Lock()
	if gr := c.groups[name]; gr != nil {
		c.forget(gr)
	}
	c.mu.Unlock()
	return true, nil
}
