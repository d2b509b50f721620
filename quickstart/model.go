package quickstart

import (
	"maps"
	"slices"
)

// location is where a live row sits: the data file and the row's ordinal in
// it. A position delete needs exactly this pair, so the demo keeps it for
// every live order instead of looking it up at delete time.
type location struct {
	file string
	pos  int64
}

type liveRow struct {
	order Order
	loc   location
}

// model is the demo's view of the table at snapshotID: every live order and
// where it is. Step plans against it and keeps it current after its own
// commits; anything else that moves the table makes the demo rebuild it (see
// recover.go).
type model struct {
	rows       map[int64]liveRow
	nextID     int64 // smallest order_id never used by a live row or this model
	snapshotID int64 // 0 before the table has any snapshot
}

func newModel() *model {
	return &model{rows: make(map[int64]liveRow), nextID: 1}
}

// sortedIDs returns the live order ids in ascending order: planning draws
// from this slice, and map iteration order would make the draws depend on
// the runtime instead of the seed.
func (m *model) sortedIDs() []int64 {
	return slices.Sorted(maps.Keys(m.rows))
}

// put records an order at a location and keeps nextID ahead of every id seen,
// including ids that another writer inserted.
func (m *model) put(o Order, loc location) {
	m.rows[o.OrderID] = liveRow{order: o, loc: loc}
	if o.OrderID >= m.nextID {
		m.nextID = o.OrderID + 1
	}
}

func (m *model) orders() map[int64]Order {
	out := make(map[int64]Order, len(m.rows))
	for id, r := range m.rows {
		out[id] = r.order
	}
	return out
}
