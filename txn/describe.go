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
			recs[i], found[i] = e.snapshot(), true
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
// ListTransactions (an id a request holds as its record was last set).
func (c *Coordinator) List(f Filter) []Record {
	es := c.entries()
	now := c.opts.Now().UnixMilli()
	var out []Record
	for _, e := range es {
		r := e.snapshot()
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

// Producer is a transactional producer that wrote a partition under its
// current epoch, for DescribeProducers.
type Producer struct {
	ProducerID   int64
	Epoch        int16
	LastSequence int32
	LastMs       int64
	// Open says a transaction of it holds staged records of the
	// partition.
	Open bool
}

// Producers lists the transactional producers that wrote topic's
// partition under their current epoch (Flink's POOLING naming strategy
// finds the transactions to abort on a topic through them).
func (c *Coordinator) Producers(topic string, partition int32) []Producer {
	tp := TopicPartition{topic, partition}
	var out []Producer
	es := c.entries()
	for _, e := range es {
		r := e.snapshot()
		i := slices.IndexFunc(r.Sequences, func(s PartitionSequence) bool { return s.TopicPartition == tp })
		if i < 0 {
			continue
		}
		open := (r.State == StateOngoing || r.State == StatePrepareCommit) && slices.Contains(r.Partitions, tp)
		out = append(out, Producer{ProducerID: r.ProducerID, Epoch: r.Epoch, LastSequence: r.Sequences[i].Last, LastMs: r.UpdateMs, Open: open})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ProducerID < out[j].ProducerID })
	return out
}
