package offsets

import (
	"context"
	"slices"
	"sync"
	"testing"
)

// memStore is the tests' Store: what package state persists, kept in
// memory per directory so that a reopened store on the same directory
// finds what the last one saved, as after a gateway's restart. It copies
// on every save and load, as a database does, so that the index cannot
// rely on sharing slices with its store. state's own tests check the
// SQLite store round-trips the same values (state/topic_store_test.go).
type memStore struct {
	data *memData
}

type memData struct {
	mu     sync.Mutex
	topics map[string]memTopic
}

type memTopic struct {
	st   TopicState
	segs []Segment
}

var memDirs sync.Map // dir -> *memData

func openStore(t *testing.T, dir string) *memStore {
	t.Helper()
	d, _ := memDirs.LoadOrStore(dir, &memData{topics: map[string]memTopic{}})
	return &memStore{data: d.(*memData)}
}

// Close ends the store's use, as state.Store.Close does; its data stays.
func (s *memStore) Close() error { return nil }

func copyState(st TopicState) TopicState {
	st.Epochs = slices.Clone(st.Epochs)
	for i := range st.Epochs {
		st.Epochs[i] = slices.Clone(st.Epochs[i])
	}
	return st
}

func (s *memStore) LoadTopic(_ context.Context, topic string) (TopicState, []Segment, bool, error) {
	s.data.mu.Lock()
	defer s.data.mu.Unlock()
	tp, ok := s.data.topics[topic]
	if !ok {
		return TopicState{}, nil, false, nil
	}
	// In the state store's order: by partition, then offset, a compacted
	// prefix before the empty segments at its end.
	segs := slices.Clone(tp.segs)
	slices.SortStableFunc(segs, func(a, b Segment) int {
		if a.Partition != b.Partition {
			return int(a.Partition - b.Partition)
		}
		if a.BaseOffset != b.BaseOffset {
			return int(a.BaseOffset - b.BaseOffset)
		}
		return int(b.Kind - a.Kind)
	})
	return copyState(tp.st), segs, true, nil
}

func (s *memStore) AppendSegments(_ context.Context, st TopicState, segs []Segment) error {
	s.data.mu.Lock()
	defer s.data.mu.Unlock()
	tp := s.data.topics[st.Topic]
	s.data.topics[st.Topic] = memTopic{st: copyState(st), segs: append(slices.Clone(tp.segs), segs...)}
	return nil
}

func (s *memStore) ReplaceTopic(_ context.Context, st TopicState, segs []Segment) error {
	s.data.mu.Lock()
	defer s.data.mu.Unlock()
	s.data.topics[st.Topic] = memTopic{st: copyState(st), segs: slices.Clone(segs)}
	return nil
}

func (s *memStore) ReplacePrefix(_ context.Context, st TopicState, replaced, prefix []Segment) error {
	s.data.mu.Lock()
	defer s.data.mu.Unlock()
	type key struct {
		p        int32
		base, id int64
	}
	drop := map[key]bool{}
	for _, g := range replaced {
		drop[key{g.Partition, g.BaseOffset, g.SnapshotID}] = true
	}
	segs := slices.Clone(prefix)
	for _, g := range s.data.topics[st.Topic].segs {
		if !drop[key{g.Partition, g.BaseOffset, g.SnapshotID}] {
			segs = append(segs, g)
		}
	}
	s.data.topics[st.Topic] = memTopic{st: copyState(st), segs: segs}
	return nil
}
