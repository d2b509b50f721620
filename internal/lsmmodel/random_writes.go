package lsmmodel

import (
	"fmt"
	"math/rand/v2"
)

// Writer is what RandomWrites writes to: an lsm.Writer (kept as an
// interface so that lsm's own tests can use this package).
type Writer interface {
	Upsert(row map[string]any) error
	Delete(key map[string]any) error
}

// RandomWrites makes n random writes over ids [0, keys): 20 % deletes,
// 40 % full upserts, 40 % partial updates of one or two columns. It writes
// each to w and applies it to next.
func RandomWrites(rng *rand.Rand, w Writer, next Model, n, keys int) error {
	for ; n > 0; n-- {
		id := int64(rng.IntN(keys))
		var err error
		switch x := rng.IntN(10); {
		case x < 2:
			err = w.Delete(map[string]any{"id": id})
			next.Apply(id, nil, nil, nil, true)
		case x < 6:
			name, qty, price := fmt.Sprintf("n%d-%d", id, rng.IntN(5)), int64(rng.IntN(100)), float64(rng.IntN(8))/4
			err = w.Upsert(map[string]any{"id": id, "name": name, "qty": qty, "price": price})
			next.Apply(id, name, qty, price, false)
		default: // partial update: one or two columns
			row := map[string]any{"id": id}
			var name, qty, price any
			if rng.IntN(2) == 0 {
				name = fmt.Sprintf("p%d-%d", id, rng.IntN(5))
				row["name"] = name
			}
			if rng.IntN(2) == 0 {
				qty = int64(rng.IntN(100))
				row["qty"] = qty
			} else {
				price = float64(rng.IntN(8)) / 4
				row["price"] = price
			}
			err = w.Upsert(row)
			next.Apply(id, name, qty, price, false)
		}
		if err != nil {
			return fmt.Errorf("write of id %d: %w", id, err)
		}
	}
	return nil
}
