package produce

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/lake"
)

// ConfigAutoEvolve, "true" on a table topic, adds a field a record brings
// that the table lacks as an optional column (schema evolution by field
// id: every Iceberg reader sees it, older rows null), instead of refusing
// the record.
const ConfigAutoEvolve = "lakegw.schema.auto-evolve"

// newColumns lists the fields of rows the table's columns lack, with the
// Iceberg type their JSON value says (a field seen only as null is left
// out: its type is unknown until a value comes).
func newColumns(columns []string, ops []rowOp) (map[string]iceberg.Type, error) {
	out := map[string]iceberg.Type{}
	for _, op := range ops {
		for name, v := range op.row {
			if slices.Contains(columns, name) || v == nil {
				continue
			}
			t, err := jsonType(v)
			if err != nil {
				return nil, fmt.Errorf("new field %q: %w", name, err)
			}
			if had, ok := out[name]; ok && !had.Equals(t) {
				if had.Equals(iceberg.PrimitiveTypes.Int64) && t.Equals(iceberg.PrimitiveTypes.Float64) {
					out[name] = t // 1 then 1.5: a double holds both
				}
				continue
			}
			out[name] = t
		}
	}
	return out, nil
}

// jsonType is the column type of a JSON value: numbers without a fraction
// or exponent are long, others double; strings string; booleans boolean.
func jsonType(v any) (iceberg.Type, error) {
	switch x := v.(type) {
	case json.Number:
		if strings.ContainsAny(string(x), ".eE") {
			return iceberg.PrimitiveTypes.Float64, nil
		}
		return iceberg.PrimitiveTypes.Int64, nil
	case string:
		return iceberg.PrimitiveTypes.String, nil
	case bool:
		return iceberg.PrimitiveTypes.Bool, nil
	}
	return nil, fmt.Errorf("a %T value makes no column (objects and arrays are not added)", v)
}

// addColumns adds cols to the table as optional columns, in name order.
func addColumns(ctx context.Context, cat catalog.Catalog, ident table.Identifier, cols map[string]iceberg.Type) error {
	names := make([]string, 0, len(cols))
	for n := range cols {
		names = append(names, n)
	}
	sort.Strings(names)
	for attempt := 1; ; attempt++ {
		tbl, err := cat.LoadTable(ctx, ident)
		if err != nil {
			return err
		}
		tx := tbl.NewTransaction()
		us := tx.UpdateSchema(true, false)
		for _, n := range names {
			if _, ok := tbl.Schema().FindFieldByName(n); ok {
				continue // another writer added it meanwhile
			}
			us = us.AddColumn([]string{n}, cols[n], "added by a producer (lakegw.schema.auto-evolve)", false, nil)
		}
		if err := us.Commit(); err != nil {
			return fmt.Errorf("evolve the schema of %s: %w", lake.TopicName(ident), err)
		}
		_, err = lake.CommitOrClean(ctx, tbl, tx)
		if err == nil || !lake.IsCommitConflict(err) || attempt >= maxCommitAttempts {
			if err != nil {
				return fmt.Errorf("evolve the schema of %s: %w", lake.TopicName(ident), err)
			}
			return nil
		}
	}
}
