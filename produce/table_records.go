package produce

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// A table topic's records are changes of rows, in the topic's format, as
// Flink's connectors write them:
//
//	upsert         key = the primary key's JSON object, value = the row's,
//	               no value (a tombstone) = delete (upsert-kafka)
//	debezium-json  {"before", "after", "op": c|r|u|d}
//	canal-json     {"data": [rows], "type": INSERT|UPDATE|DELETE}
//	json           the row, upserted
//
// Each becomes row operations applied to the table in record order.

// rowOp is one write of a produced record: an upsert of row, or a delete
// of the key it holds.
type rowOp struct {
	row map[string]any
	del bool
}

// errNotAnObject and the like name what is wrong with a record.
var errNotAnObject = errors.New("not a JSON object")

// decodeRow parses a JSON object, numbers as json.Number so no digit is
// lost before the column's type decides.
func decodeRow(b []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var m map[string]any
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("value is not JSON: %w", err)
	}
	if m == nil {
		return nil, errNotAnObject
	}
	if dec.More() {
		return nil, errors.New("value has data after its JSON object")
	}
	return m, nil
}

// rowOps turns one record into row operations in format.
func rowOps(format string, r *Record) ([]rowOp, error) {
	switch format {
	case "upsert":
		if r.Value == nil {
			if r.Key == nil {
				return nil, errors.New("a tombstone without a key deletes nothing")
			}
			key, err := decodeRow(r.Key)
			if err != nil {
				return nil, fmt.Errorf("key: %w", err)
			}
			return []rowOp{{row: key, del: true}}, nil
		}
		row, err := decodeRow(r.Value)
		if err != nil {
			return nil, err
		}
		if r.Key != nil {
			// upsert-kafka may leave the key's fields out of the value
			// ('value.fields-include' = 'EXCEPT_KEY').
			key, err := decodeRow(r.Key)
			if err != nil {
				return nil, fmt.Errorf("key: %w", err)
			}
			for k, v := range key {
				if _, ok := row[k]; !ok {
					row[k] = v
				}
			}
		}
		return []rowOp{{row: row}}, nil
	case "json":
		row, err := decodeRow(r.Value)
		if err != nil {
			return nil, err
		}
		return []rowOp{{row: row}}, nil
	case "debezium-json":
		return debeziumOps(r.Value)
	case "canal-json":
		return canalOps(r.Value)
	}
	return nil, fmt.Errorf("format %q takes no records", format)
}

// debeziumOps reads Debezium's envelope (with or without the schema
// wrapper's "payload").
func debeziumOps(v []byte) ([]rowOp, error) {
	if v == nil {
		return nil, nil // Debezium's tombstone after a delete: nothing more to do
	}
	m, err := decodeRow(v)
	if err != nil {
		return nil, err
	}
	if p, ok := m["payload"].(map[string]any); ok {
		m = p
	}
	op, _ := m["op"].(string)
	switch op {
	case "c", "r", "u":
		after, ok := m["after"].(map[string]any)
		if !ok {
			return nil, fmt.Errorf("debezium op %q without an \"after\" object", op)
		}
		return []rowOp{{row: after}}, nil
	case "d":
		before, ok := m["before"].(map[string]any)
		if !ok {
			return nil, errors.New("debezium delete without a \"before\" object")
		}
		return []rowOp{{row: before, del: true}}, nil
	}
	return nil, fmt.Errorf("debezium op %q: want c, r, u or d", op)
}

// canalOps reads Canal's JSON message: each row of "data" is written or
// deleted.
func canalOps(v []byte) ([]rowOp, error) {
	m, err := decodeRow(v)
	if err != nil {
		return nil, err
	}
	typ, _ := m["type"].(string)
	data, ok := m["data"].([]any)
	if !ok {
		return nil, errors.New("canal message without a \"data\" array")
	}
	del := false
	switch typ {
	case "INSERT", "UPDATE":
	case "DELETE":
		del = true
	default:
		return nil, fmt.Errorf("canal type %q: want INSERT, UPDATE or DELETE", typ)
	}
	ops := make([]rowOp, 0, len(data))
	for i, d := range data {
		row, ok := d.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("canal data[%d] is not an object", i)
		}
		ops = append(ops, rowOp{row: row, del: del})
	}
	return ops, nil
}
