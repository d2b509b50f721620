package groups

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"
)

// offsetTable holds the committed offsets of every group in memory, the
// copy OffsetFetch reads; the OffsetStore holds the durable one.
//
// Reads take mu briefly. Writes of one group are serialised by that
// group's 1-slot semaphore around "save to the store, then apply": the
// store and the memory see a group's commits in the same order, a slow
// save delays only that group's commits, and a waiting commit gives up
// when its connection closes.
//
// At most maxGroups groups have an entry (Options.MaxGroups): a commit
// that would add one more fails with errTooManyGroups. A group holds at
// most maxPerGroup partitions (Options.MaxOffsetsPerGroup): a commit that
// would add more fails with errTooManyOffsets.
type offsetTable struct {
	mu          sync.RWMutex
	groups      map[string]*groupOffsets
	maxGroups   int // negative: unlimited
	maxPerGroup int // negative: unlimited
}

// errTooManyGroups refuses a commit that would add a group past
// Options.MaxGroups.
var errTooManyGroups = errors.New("too many groups with committed offsets")

// errTooManyOffsets refuses a commit that would give a group offsets for
// more than Options.MaxOffsetsPerGroup partitions.
var errTooManyOffsets = errors.New("too many partitions with committed offsets in one group")

type groupOffsets struct {
	sem   chan struct{}
	parts map[string]map[int32]CommittedOffset // topic -> partition
	// count is the number of partitions in parts, kept by set: a commit
	// checks the per-group cap without walking them.
	count int
	// emptiedMs is when the group last lost its last member (0: not seen
	// in this process). Retention counts from it or the latest commit,
	// whichever is later.
	emptiedMs int64
}

func newOffsetTable(maxGroups, maxPerGroup int) *offsetTable {
	return &offsetTable{groups: make(map[string]*groupOffsets), maxGroups: maxGroups, maxPerGroup: maxPerGroup}
}

// load replaces the table with what the store returned.
func (t *offsetTable) load(offs []CommittedOffset) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.groups = make(map[string]*groupOffsets)
	for _, o := range offs {
		t.entry(o.Group).set(o)
	}
}

// dropIf forgets the offsets of the groups drop reports (a coordinator
// that no longer answers for them).
func (t *offsetTable) dropIf(drop func(group string) bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for name := range t.groups {
		if drop(name) {
			delete(t.groups, name)
		}
	}
}

// replaceGroups replaces the offsets of the groups in reports with offs
// (those groups' offsets, as the store holds them).
func (t *offsetTable) replaceGroups(in func(group string) bool, offs []CommittedOffset) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for name := range t.groups {
		if in(name) {
			delete(t.groups, name)
		}
	}
	for _, o := range offs {
		t.entry(o.Group).set(o)
	}
}

// entry returns the group's offsets, creating them. Called with mu held
// for writing. Loading from the store uses it directly: what is stored is
// kept even past maxGroups (an older gateway may have stored more).
func (t *offsetTable) entry(group string) *groupOffsets {
	g := t.groups[group]
	if g == nil {
		g = &groupOffsets{sem: make(chan struct{}, 1), parts: make(map[string]map[int32]CommittedOffset)}
		t.groups[group] = g
	}
	return g
}

// partitionsAfter is the number of partitions g would hold offsets for
// once offs are committed. Called with the table's mu held.
func (g *groupOffsets) partitionsAfter(offs []CommittedOffset) int {
	n := g.count
	type tp struct {
		topic string
		p     int32
	}
	added := map[tp]bool{}
	for _, o := range offs {
		if _, ok := g.parts[o.Topic][o.Partition]; !ok && !added[tp{o.Topic, o.Partition}] {
			added[tp{o.Topic, o.Partition}] = true
			n++
		}
	}
	return n
}

func (g *groupOffsets) set(o CommittedOffset) {
	ps := g.parts[o.Topic]
	if ps == nil {
		ps = make(map[int32]CommittedOffset)
		g.parts[o.Topic] = ps
	}
	if _, ok := ps[o.Partition]; !ok {
		g.count++
	}
	ps[o.Partition] = o
}

// commit saves offs (all of one group) to store and, once that is
// durable, makes them visible to fetches. A nil store commits to memory
// only.
func (t *offsetTable) commit(ctx context.Context, store OffsetStore, group string, offs []CommittedOffset) error {
	g, err := t.acquire(ctx, group, true)
	if err != nil {
		return fmt.Errorf("commit offsets of group %q: %w", group, err)
	}
	defer func() { <-g.sem }()

	t.mu.RLock()
	n := g.partitionsAfter(offs)
	t.mu.RUnlock()
	if atLimit(n-1, t.maxPerGroup) {
		t.dropIfEmpty(group, g)
		return fmt.Errorf("commit offsets of group %q: %d partitions, at most %d: %w", group, n, t.maxPerGroup, errTooManyOffsets)
	}
	if store != nil {
		if err := store.SaveOffsets(ctx, offs); err != nil {
			t.dropIfEmpty(group, g)
			return fmt.Errorf("save offsets of group %q: %w", group, err)
		}
	}
	t.mu.Lock()
	for _, o := range offs {
		g.set(o)
	}
	t.mu.Unlock()
	return nil
}

// acquire returns the group's entry holding its semaphore. A missing
// entry is created when create is set and maxGroups leaves room
// (errTooManyGroups otherwise); without create, a missing entry is
// (nil, nil). An entry that expiry dropped while we waited is not the
// group's any more: writing into it would lose the commit, so try again.
func (t *offsetTable) acquire(ctx context.Context, group string, create bool) (*groupOffsets, error) {
	for {
		t.mu.Lock()
		g := t.groups[group]
		switch {
		case g != nil:
		case !create:
			t.mu.Unlock()
			return nil, nil
		case atLimit(len(t.groups), t.maxGroups):
			t.mu.Unlock()
			return nil, errTooManyGroups
		default:
			g = t.entry(group)
		}
		t.mu.Unlock()
		select {
		case g.sem <- struct{}{}:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		t.mu.RLock()
		current := t.groups[group] == g
		t.mu.RUnlock()
		if current {
			return g, nil
		}
		<-g.sem
	}
}

// dropIfEmpty removes g, the entry of group, when it holds no offset (a
// first commit whose save failed), so it does not count against
// maxGroups. Called holding g's semaphore.
func (t *offsetTable) dropIfEmpty(group string, g *groupOffsets) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(g.parts) == 0 && t.groups[group] == g {
		delete(t.groups, group)
	}
}

// touch records that group emptied at now, if it has committed offsets
// (an entry for every group that ever had a member would grow without
// bound).
func (t *offsetTable) touch(group string, now time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if g := t.groups[group]; g != nil {
		g.emptiedMs = max(g.emptiedMs, now.UnixMilli())
	}
}

// lastActiveMs is the later of the group's latest commit and the time it
// emptied. Called with mu held.
func (g *groupOffsets) lastActiveMs() int64 {
	ms := g.emptiedMs
	for _, ps := range g.parts {
		for _, o := range ps {
			ms = max(ms, o.CommitTimeMs)
		}
	}
	return ms
}

// onTopic returns every group's committed offsets on topic, sorted by
// group and partition.
func (t *offsetTable) onTopic(topic string) []CommittedOffset {
	t.mu.RLock()
	var out []CommittedOffset
	for _, g := range t.groups {
		for _, o := range g.parts[topic] {
			out = append(out, o)
		}
	}
	t.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool {
		if out[i].Group != out[j].Group {
			return out[i].Group < out[j].Group
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}

// get returns the committed offset of one partition.
func (t *offsetTable) get(group, topic string, partition int32) (CommittedOffset, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	g := t.groups[group]
	if g == nil {
		return CommittedOffset{}, false
	}
	o, ok := g.parts[topic][partition]
	return o, ok
}

// all returns every committed offset of group, sorted by topic and
// partition so responses are stable.
func (t *offsetTable) all(group string) []CommittedOffset {
	t.mu.RLock()
	defer t.mu.RUnlock()
	g := t.groups[group]
	if g == nil {
		return nil
	}
	var out []CommittedOffset
	for _, ps := range g.parts {
		for _, o := range ps {
			out = append(out, o)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}

// hasGroup reports whether group has any committed offset.
func (t *offsetTable) hasGroup(group string) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	g := t.groups[group]
	return g != nil && len(g.parts) > 0
}

// entryNames lists every group with an entry, offsets or not.
func (t *offsetTable) entryNames() []string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	names := make([]string, 0, len(t.groups))
	for name := range t.groups {
		names = append(names, name)
	}
	return names
}

// groupNames lists the groups with committed offsets.
func (t *offsetTable) groupNames() []string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	names := make([]string, 0, len(t.groups))
	for name, g := range t.groups {
		if len(g.parts) > 0 {
			names = append(names, name)
		}
	}
	return names
}
