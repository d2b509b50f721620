package txn

import (
	"slices"
	"sort"
)

// Describe returns the records of ids (found false for an unknown id),
// for DescribeTransactions.
func (c *Coordinator) Describe(ids []string) (recs []Record, found []bool) {
	recs, found = make([]Record, len(ids)), make([]bool, len(ids))
	for i, id := range ids {
		if e := c.get(id); e != nil {
			e.mu.Lock()
			recs[i], found[i] = e.rec, true
			e.mu.Unlock()
		}
	}
	return recs, found
}

// Filter selects transactional ids for List; an empty field selects all.
type Filter struct {
	States      []State
	ProducerIDs []int64
	// MinDurationMs selects transactions open at least this long (-1 or
	// 0: any).
	MinDurationMs int64
}

// List returns the records Filter selects, sorted by id, for
// ListTransactions (an id being completed is reported once it is).
func (c *Coordinator) List(f Filter) []Record {
	c.mu.Lock()
	es := make([]*entry, 0, len(c.ids))
	for _, e := range c.ids {
		es = append(es, e)
	}
	c.mu.Unlock()
	now := c.opts.Now().UnixMilli()
	var out []Record
	for _, e := range es {
		e.mu.Lock()
		r := e.rec
		e.mu.Unlock()
		if len(f.States) > 0 && !slices.Contains(f.States, r.State) {
			continue
		}
		if len(f.ProducerIDs) > 0 && !slices.Contains(f.ProducerIDs, r.ProducerID) {
			continue
		}
		if f.MinDurationMs > 0 && (r.StartMs < 0 || now-r.StartMs < f.MinDurationMs) {
			continue
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}
