package lsm

import (
	"fmt"
	"slices"
	"strings"

	"github.com/apache/iceberg-go"
)

// mergeEngine folds the writes of one key into its row, as Paimon's merge
// engines do. A delete removes the row under every engine (and with it the
// aggregation state): lakegw has no retraction semantics.
type mergeEngine struct {
	name string
	// aggregation: per column (key columns unused)
	aggs []string
	// partial-update sequence groups: sequence column -> columns
	groups []seqGroup
	// grouped[i] is true when column i belongs to a sequence group
	grouped []bool
}

type seqGroup struct {
	seq  int
	cols []int
}

func parseEngine(s *spec, props iceberg.Properties) (*mergeEngine, error) {
	e := &mergeEngine{name: props.Get(PropMergeEngine, EngineDeduplicate)}
	switch e.name {
	case EngineDeduplicate, EngineFirstRow:
	case EnginePartialUpdate:
		e.grouped = make([]bool, len(s.names))
		for k, v := range props {
			col, ok := strings.CutPrefix(k, PropSeqGroupPrefix)
			if !ok {
				continue
			}
			seq, err := s.column(col)
			if err != nil {
				return nil, fmt.Errorf("table property %s: %w", k, err)
			}
			g := seqGroup{seq: seq}
			for _, name := range strings.Split(v, ",") {
				c, err := s.column(strings.TrimSpace(name))
				if err != nil || s.isKey(c) {
					return nil, fmt.Errorf("table property %s=%s: %q is not a non-key column", k, v, name)
				}
				g.cols = append(g.cols, c)
				e.grouped[c] = true
			}
			e.grouped[seq] = true
			e.groups = append(e.groups, g)
		}
		slices.SortFunc(e.groups, func(a, b seqGroup) int { return a.seq - b.seq })
	case EngineAggregation:
		e.aggs = make([]string, len(s.names))
		for i, name := range s.names {
			f := props.Get(PropAggPrefix+name, "last_non_null")
			if !slices.Contains(aggFuncs, f) {
				return nil, fmt.Errorf("table property %s%s=%s: want one of %s", PropAggPrefix, name, f, strings.Join(aggFuncs, ", "))
			}
			if err := checkAgg(f, s.kinds[i]); err != nil {
				return nil, fmt.Errorf("column %s: %w", name, err)
			}
			e.aggs[i] = f
		}
	default:
		return nil, fmt.Errorf("table property %s=%s: want deduplicate, partial-update, aggregation or first-row", PropMergeEngine, e.name)
	}
	return e, nil
}

func checkAgg(f string, k kind) error {
	switch f {
	case "sum":
		if k != kInt32 && k != kInt64 && k != kFloat32 && k != kFloat64 && k != kDecimal {
			return fmt.Errorf("sum needs a numeric column")
		}
	case "count":
		if k != kInt32 && k != kInt64 {
			return fmt.Errorf("count needs an int or long column")
		}
	case "min", "max":
		if k == kBool {
			return fmt.Errorf("%s needs an ordered column", f)
		}
	}
	return nil
}

// merge returns the row after applying the write in to the stored row old
// (nil when the key has no row). It never modifies old or in. It fails
// only when an aggregate does not fit its column (a decimal sum beyond the
// precision).
func (e *mergeEngine) merge(s *spec, old, in Row) (Row, error) {
	switch e.name {
	case EngineFirstRow:
		if old != nil {
			return old, nil
		}
		return slices.Clone(in), nil
	case EnginePartialUpdate:
		return e.partial(old, in), nil
	case EngineAggregation:
		return e.aggregate(s, old, in)
	}
	return slices.Clone(in), nil
}

// partial: a null in the input keeps the stored value; columns of a
// sequence group change only together, and only when the input's sequence
// value is not older than the stored one.
func (e *mergeEngine) partial(old, in Row) Row {
	if old == nil {
		old = make(Row, len(in))
	}
	out := slices.Clone(old)
	for i, v := range in {
		if v != nil && !e.grouped[i] {
			out[i] = v
		}
	}
	for _, g := range e.groups {
		nv := in[g.seq]
		if nv == nil {
			continue
		}
		if ov := old[g.seq]; ov != nil && compareValues(nv, ov) < 0 {
			continue
		}
		out[g.seq] = nv
		for _, c := range g.cols {
			if in[c] != nil {
				out[c] = in[c]
			}
		}
	}
	return out
}

func (e *mergeEngine) aggregate(s *spec, old, in Row) (Row, error) {
	out := make(Row, len(in))
	for i := range in {
		var ov any
		if old != nil {
			ov = old[i]
		}
		if s.isKey(i) {
			out[i] = in[i]
			continue
		}
		v, err := aggValue(e.aggs[i], s.kinds[i], s.decs[i], ov, in[i])
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", s.names[i], err)
		}
		out[i] = v
	}
	return out, nil
}

// aggValue folds one input value into the stored aggregate of a column of
// kind k, decimal type dec (acc is nil when the key had no row or no
// value).
func aggValue(f string, k kind, dec decType, acc, v any) (any, error) {
	switch f {
	case "count":
		n := int64(0)
		if acc != nil {
			n, _ = toInt(acc)
		}
		if v != nil {
			n++
		}
		if k == kInt32 {
			return int32(n), nil
		}
		return n, nil
	case "last_non_null":
		if v != nil {
			return v, nil
		}
		return acc, nil
	case "first_non_null":
		if acc != nil {
			return acc, nil
		}
		return v, nil
	}
	if v == nil {
		return acc, nil
	}
	if acc == nil {
		return v, nil
	}
	switch f {
	case "sum":
		switch x := acc.(type) {
		case int32:
			return x + v.(int32), nil
		case int64:
			return x + v.(int64), nil
		case float32:
			return x + v.(float32), nil
		case float64:
			return x + v.(float64), nil
		case Decimal:
			// Exact; a sum the column cannot hold is an error, not a
			// wrapped or rounded value.
			return sumDecimals(x, v.(Decimal), dec)
		}
	case "min":
		if compareValues(v, acc) < 0 {
			return v, nil
		}
	case "max":
		if compareValues(v, acc) > 0 {
			return v, nil
		}
	}
	return acc, nil
}
