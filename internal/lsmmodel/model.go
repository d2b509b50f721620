package lsmmodel

import "github.com/apache/iceberg-go"

// Schema is the modelled table's: id long (the key), name string, qty
// long, price double.
var Schema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String},
	iceberg.NestedField{ID: 3, Name: "qty", Type: iceberg.PrimitiveTypes.Int64},
	iceberg.NestedField{ID: 4, Name: "price", Type: iceberg.PrimitiveTypes.Float64},
)

// Model is the expected table: id -> (id, name, qty, price).
type Model map[int64][4]any

// Apply is the partial-update engine: a delete removes the row, an upsert
// sets the non-nil columns and keeps the others.
func (m Model) Apply(id int64, name, qty, price any, del bool) {
	if del {
		delete(m, id)
		return
	}
	r, ok := m[id]
	if !ok {
		r = [4]any{id, nil, nil, nil}
	}
	for i, v := range []any{name, qty, price} {
		if v != nil {
			r[i+1] = v
		}
	}
	m[id] = r
}

// Clone returns a copy of m.
func (m Model) Clone() Model {
	out := make(Model, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
