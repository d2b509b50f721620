package quickstart

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// stepPlan is the logical content of one snapshot: the rows it adds and the
// live rows it retires. An update appears as a new image in updates; its old
// image is retired through a position delete like a delete is.
type stepPlan struct {
	inserts []Order
	updates []Order // new images, keyed by an order_id that is live in the model
	deletes []int64 // order_ids that are live in the model
}

// written returns the rows the snapshot's data file holds, in file order.
func (p stepPlan) written() []Order {
	out := make([]Order, 0, len(p.inserts)+len(p.updates))
	out = append(out, p.inserts...)
	return append(out, p.updates...)
}

// retired returns the order_ids whose current row the snapshot deletes by
// position: every updated and every deleted order.
func (p stepPlan) retired() []int64 {
	out := make([]int64, 0, len(p.updates)+len(p.deletes))
	for _, o := range p.updates {
		out = append(out, o.OrderID)
	}
	return append(out, p.deletes...)
}

type product struct {
	name       string
	priceCents int64
}

var (
	customers = []string{
		"Ada Lovelace", "Alan Turing", "Grace Hopper", "Edsger Dijkstra", "Barbara Liskov",
		"Donald Knuth", "Frances Allen", "Ken Thompson", "Margaret Hamilton", "Dennis Ritchie",
		"Radia Perlman", "John McCarthy", "Katherine Johnson", "Niklaus Wirth", "Leslie Lamport",
	}
	products = []product{
		{"mechanical keyboard", 12900}, {"usb-c hub", 3999}, {"27in monitor", 28900},
		{"noise-cancelling headphones", 19950}, {"laptop stand", 4599}, {"webcam", 6950},
		{"desk lamp", 2999}, {"ergonomic mouse", 5499}, {"standing desk", 49900}, {"cable kit", 1250},
	}
	insertNotes = []string{"gift wrap", "leave at the door", "call before delivery", "business invoice"}
)

// planStep draws one snapshot's changes. The first snapshot of an empty table
// is a plain append of opts.InitialOrders so a reader sees data at once; later
// ones mix a few inserts with updates and deletes of live orders, which is the
// shape of change stream the gateway exists to serve.
func planStep(rng *rand.Rand, m *model, now time.Time, opts DemoOptions) stepPlan {
	if len(m.rows) == 0 {
		return stepPlan{inserts: newOrders(rng, m.nextID, opts.InitialOrders, now)}
	}

	ids := m.sortedIDs()
	rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	nUpdates := min(len(ids), 1+rng.IntN(opts.MaxUpdatesPerStep))
	nDeletes := min(len(ids)-nUpdates, rng.IntN(opts.MaxDeletesPerStep+1))
	nInserts := opts.MinInsertsPerStep + rng.IntN(opts.MaxInsertsPerStep-opts.MinInsertsPerStep+1)

	var p stepPlan
	p.inserts = newOrders(rng, m.nextID, nInserts, now)
	for _, id := range ids[:nUpdates] {
		p.updates = append(p.updates, updateOrder(rng, m.rows[id].order, now))
	}
	p.deletes = append(p.deletes, ids[nUpdates:nUpdates+nDeletes]...)
	return p
}

func newOrders(rng *rand.Rand, firstID int64, n int, now time.Time) []Order {
	out := make([]Order, n)
	for i := range out {
		pr := products[rng.IntN(len(products))]
		qty := int32(1 + rng.IntN(4))
		o := Order{
			OrderID:     firstID + int64(i),
			Customer:    customers[rng.IntN(len(customers))],
			Product:     pr.name,
			Status:      StatusPending,
			AmountCents: pr.priceCents * int64(qty),
			Quantity:    qty,
			CreatedAt:   now,
			UpdatedAt:   now,
		}
		if rng.IntN(4) == 0 {
			o.Note = ptr(insertNotes[rng.IntN(len(insertNotes))])
		}
		out[i] = o
	}
	return out
}

// updateOrder moves an order along its lifecycle. Every branch changes at
// least one column besides updated_at, so each update has a visible before
// and after image.
func updateOrder(rng *rand.Rand, o Order, now time.Time) Order {
	o.UpdatedAt = now
	switch o.Status {
	case StatusPending:
		switch rng.IntN(4) {
		case 0: // the customer changes the quantity before paying
			if o.Quantity <= 0 { // a row from another writer; no unit price to derive
				o.Status = StatusPaid
				break
			}
			unit := o.AmountCents / int64(o.Quantity)
			o.Quantity = int32(1 + (int(o.Quantity)+rng.IntN(3))%5)
			o.AmountCents = unit * int64(o.Quantity)
			o.Note = ptr("quantity changed")
		case 1:
			o.Status = StatusCancelled
		default:
			o.Status = StatusPaid
		}
	case StatusPaid:
		if rng.IntN(5) == 0 {
			o.Status = StatusCancelled
			o.Note = ptr("refunded")
		} else {
			o.Status = StatusShipped
		}
	case StatusShipped:
		o.Status = StatusDelivered
	default: // delivered or cancelled: only after-sales notes change
		o.Note = ptr(fmt.Sprintf("rated %d/5", 1+rng.IntN(5)))
	}
	return o
}

func ptr[T any](v T) *T { return &v }
