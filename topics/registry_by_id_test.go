package topics

import (
	"testing"

	"github.com/google/uuid"
	"github.com/rs/zerolog"
)

// Topics are found by ID (their table's UUID, the Kafka topic id) while
// they are served; of two topics on one table (a table registered under
// two names) the first by name, and the other once that one is retired. A
// topic without a UUID (a format v1 table may have none) has no ID to be
// found by.
func TestRegistryTopicByID(t *testing.T) {
	r := New(Config{}, nil, nil, zerolog.Nop())
	id := uuid.New()
	serve := func(name string, id uuid.UUID) *Topic {
		tp := &Topic{Name: name, ID: id, changed: make(chan struct{})}
		r.watchers[name] = &watcher{topic: tp, cancel: func() {}}
		r.publish(tp)
		return tp
	}
	b := serve("ns.b", id)
	if got, ok := r.TopicByID(id); !ok || got != b {
		t.Fatalf("TopicByID = %v %v, want ns.b", got, ok)
	}
	a := serve("ns.a", id)
	if got, _ := r.TopicByID(id); got != a {
		t.Fatalf("two topics on one table: %v, want the first by name", got.Name)
	}
	serve("ns.c", id)
	if got, _ := r.TopicByID(id); got != a {
		t.Fatalf("a third topic on the table took the id: %v", got.Name)
	}
	r.mu.Lock()
	r.retireLocked("ns.a", r.watchers["ns.a"])
	r.mu.Unlock()
	if got, ok := r.TopicByID(id); !ok || got != b {
		t.Fatalf("after ns.a is retired: %v %v, want ns.b", got, ok)
	}
	r.mu.Lock()
	r.retireLocked("ns.b", r.watchers["ns.b"])
	r.retireLocked("ns.c", r.watchers["ns.c"])
	r.mu.Unlock()
	if got, ok := r.TopicByID(id); ok {
		t.Fatalf("a retired topic is still found: %v", got.Name)
	}
	serve("ns.v1", uuid.Nil)
	if got, ok := r.TopicByID(uuid.Nil); ok {
		t.Fatalf("a topic without a UUID is found by the zero id: %v", got.Name)
	}
}
