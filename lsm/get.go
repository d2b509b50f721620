package lsm

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/apache/iceberg-go"
)

// Get returns the latest committed row of a key (given by its key columns),
// by column name, and whether it exists. It reads the few files of the
// key's bucket that the key bounds and bloom filters admit, never a scan.
func (t *Table) Get(ctx context.Context, key map[string]any) (map[string]any, bool, error) {
	tbl, sp, err := t.load(ctx)
	if err != nil {
		return nil, false, err
	}
	kr, err := sp.rowFromMap(key)
	if err != nil {
		return nil, false, err
	}
	for i := range kr {
		if !sp.isKey(i) && kr[i] != nil {
			return nil, false, fmt.Errorf("get: column %s is not a key column", sp.names[i])
		}
	}
	k, err := sp.keyOf(kr)
	if err != nil {
		return nil, false, err
	}
	bs, err := bucketsOf(sp, []Row{kr})
	if err != nil {
		return nil, false, err
	}
	st, err := loadState(ctx, tbl, sp, keyFilter(sp, kr))
	if err != nil {
		return nil, false, err
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("file IO: %w", err)
	}
	live, err := t.lookup(ctx, fs, sp, st.buckets[bs[0]], []string{k}, []Row{kr})
	if err != nil {
		return nil, false, err
	}
	lr := live[k]
	if lr == nil {
		return nil, false, nil
	}
	return sp.rowToMap(lr.row), true, nil
}

// ParseKey turns a key given as text into key columns: a JSON object of the
// key columns, or for a one-column key its value (JSON or bare text).
func (t *Table) ParseKey(s string) (map[string]any, error) {
	_, sp, err := t.load(context.Background())
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		v = s // bare text
	}
	if m, ok := v.(map[string]any); ok {
		return m, nil
	}
	if len(sp.keyIdx) != 1 {
		return nil, fmt.Errorf("the key has %d columns: give it as a JSON object", len(sp.keyIdx))
	}
	return map[string]any{sp.names[sp.keyIdx[0]]: v}, nil
}

// keyFilter is the row filter "key columns = key values": it lets the
// planner skip manifests and data files by their key statistics.
func keyFilter(sp *spec, kr Row) iceberg.BooleanExpression {
	var preds []iceberg.BooleanExpression
	for _, i := range sp.keyIdx {
		ref := iceberg.Reference(sp.names[i])
		var p iceberg.BooleanExpression
		switch v := kr[i].(type) {
		case bool:
			p = iceberg.EqualTo(ref, v)
		case int32:
			if sp.kinds[i] == kDate {
				p = iceberg.EqualTo(ref, iceberg.Date(v))
			} else {
				p = iceberg.EqualTo(ref, v)
			}
		case int64:
			if sp.kinds[i] == kInt64 {
				p = iceberg.EqualTo(ref, v)
			} else {
				p = iceberg.EqualTo(ref, iceberg.Timestamp(v))
			}
		case float32:
			p = iceberg.EqualTo(ref, v)
		case float64:
			p = iceberg.EqualTo(ref, v)
		case string:
			p = iceberg.EqualTo(ref, v)
		case []byte:
			p = iceberg.EqualTo(ref, v)
		case Decimal:
			p = iceberg.EqualTo(ref, iceberg.Decimal{Val: v.Unscaled, Scale: int(v.Scale)})
		default:
			return nil
		}
		preds = append(preds, p)
	}
	switch len(preds) {
	case 0:
		return nil
	case 1:
		return preds[0]
	}
	return iceberg.NewAnd(preds[0], preds[1], preds[2:]...)
}
