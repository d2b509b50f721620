package changelog

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
)

// changesEncoders holds, per batch of a Changes, the appenders of a whole row
// and of its key object.
type changesEncoders struct {
	batches []batchEncoder
	// The snapshot's part of every record's envelope, the same for all
	// of its records: written once rather than per record.
	debeziumTail, canalTail []byte
}

type batchEncoder struct {
	row appendFn
	// key is nil when the Changes has no key fields.
	key appendFn
}

// Prepare builds the JSON encoders of every batch once, so that formats then
// encode records without allocating, and reports columns that cannot be
// encoded. derive.Derive calls it; code that builds a Changes itself should
// call it before sharing the Changes between goroutines (it mutates c). It
// writes Table, SnapshotID, SequenceNumber and TimestampMs into the
// envelopes of the formats once: they must not change afterwards.
func (c *Changes) Prepare() error {
	enc, err := buildEncoders(c)
	if err != nil {
		return err
	}
	c.enc = enc
	return nil
}

// encoders returns the prepared encoders, or builds throwaway ones for a
// Changes that was never prepared.
func (c *Changes) encoders() (*changesEncoders, error) {
	if c.enc != nil {
		return c.enc, nil
	}
	return buildEncoders(c)
}

func buildEncoders(c *Changes) (*changesEncoders, error) {
	enc := &changesEncoders{batches: make([]batchEncoder, len(c.Batches)),
		debeziumTail: appendDebeziumTail(nil, c), canalTail: appendCanalTail(nil, c)}
	keyIDs := c.KeyFieldIDs
	if c.Target != nil {
		keyIDs = c.TargetKeyFieldIDs
	}
	// A snapshot written in the target schema itself (the common case)
	// needs no projection.
	project := c.Target != nil && c.Target.ID != c.Schema.ID
	for i, b := range c.Batches {
		var row, key appendFn
		var err error
		if project {
			row, err = projectedRowAppender(b, c.Schema, c.Target)
		} else {
			row, err = RowAppender(b)
		}
		if err != nil {
			return nil, fmt.Errorf("batch %d of %s snapshot %d: %w", i, c.Table, c.SnapshotID, err)
		}
		if len(keyIDs) > 0 {
			if project {
				key, err = projectedKeyAppender(b, c.Schema, c.Target, keyIDs)
			} else {
				key, err = KeyAppender(c.Schema, b, keyIDs)
			}
			if err != nil {
				return nil, fmt.Errorf("key of batch %d of %s snapshot %d: %w", i, c.Table, c.SnapshotID, err)
			}
		}
		enc.batches[i] = batchEncoder{row: row, key: key}
	}
	return enc, nil
}

// RowAppender returns a function that appends a row of b as the JSON
// object of its columns that the formats write as a before- or
// after-image. Exported for derive/, whose copy-on-write diff cancels a
// removed and an added row when this JSON of theirs is equal.
func RowAppender(b arrow.RecordBatch) (func(dst []byte, row int) []byte, error) {
	sc := b.Schema()
	cols := make([]appendFn, b.NumCols())
	var prefix []byte
	names := make([][]byte, len(cols))
	for i := range cols {
		var err error
		if cols[i], err = newAppender(b.Column(i)); err != nil {
			return nil, fmt.Errorf("column %s: %w", sc.Field(i).Name, err)
		}
		names[i] = appendObjectKey(prefix, i == 0, sc.Field(i).Name)
	}
	return objectOf(names, cols), nil
}

// KeyAppender returns a function that appends the key fields ids of a row
// of b as the JSON object the formats write as the record key. Nested key
// fields are named by their dotted path and are null when a parent is
// null. Exported for derive/, which pairs a removed and an added row of
// the same key JSON into one update.
func KeyAppender(schema *iceberg.Schema, b arrow.RecordBatch, ids []int) (func(dst []byte, row int) []byte, error) {
	return keyAppender(schema, b, ids, nil)
}

// projectedKeyAppender writes the key fields ids of to, read from a row of
// b (the columns of from), under their names in to: a key field from
// lacks is its initial default.
func projectedKeyAppender(b arrow.RecordBatch, from, to *iceberg.Schema, ids []int) (appendFn, error) {
	names := make([]string, len(ids))
	for i, id := range ids {
		name, ok := to.FindColumnName(id)
		if !ok {
			return nil, fmt.Errorf("key field id %d is not in schema %d", id, to.ID)
		}
		names[i] = name
	}
	value := func(arr arrow.Array, id int) (appendFn, error) {
		f, _ := from.FindFieldByID(id)
		t, _ := to.FindFieldByID(id)
		return projectValue(arr, f.Type, t.Type, "")
	}
	missing := func(id int) ([]byte, error) {
		t, _ := to.FindFieldByID(id)
		return initialDefaultJSON(t)
	}
	return keyAppenderOf(from, b, ids, names, value, missing)
}

// keyAppender writes the key fields ids of schema, a row of b, named by
// names (nil: their names in schema).
func keyAppender(schema *iceberg.Schema, b arrow.RecordBatch, ids []int, names []string) (appendFn, error) {
	own := make([]string, len(ids))
	for i, id := range ids {
		if i < len(names) && names[i] != "" {
			own[i] = names[i]
		} else {
			own[i], _ = schema.FindColumnName(id)
		}
	}
	names = own
	value := func(arr arrow.Array, _ int) (appendFn, error) { return newAppender(arr) }
	return keyAppenderOf(schema, b, ids, names, value, nil)
}

// keyAppenderOf writes an object of the key fields ids under names, each
// value read from its column of b (the columns of schema) by value, or
// missing's constant when schema lacks it (nil: an error).
func keyAppenderOf(schema *iceberg.Schema, b arrow.RecordBatch, ids []int, names []string,
	value func(arr arrow.Array, id int) (appendFn, error), missing func(id int) ([]byte, error)) (appendFn, error) {
	type keyCol struct {
		name    []byte
		parents []arrow.Array
		value   appendFn
	}
	keys := make([]keyCol, len(ids))
	for i, id := range ids {
		name := appendObjectKey(nil, i == 0, names[i])
		if missing != nil && !holdsField(schema, id) {
			v, err := missing(id)
			if err != nil {
				return nil, fmt.Errorf("key field %s: %w", names[i], err)
			}
			keys[i] = keyCol{name: name, value: func(dst []byte, _ int) []byte { return append(dst, v...) }}
			continue
		}
		path, err := fieldPath(schema, id)
		if err != nil {
			return nil, err
		}
		if path[0] >= int(b.NumCols()) {
			return nil, fmt.Errorf("key field %d is column %d, batch has %d columns", id, path[0], b.NumCols())
		}
		arr := b.Column(path[0])
		var parents []arrow.Array
		for _, idx := range path[1:] {
			st, ok := arr.(*array.Struct)
			if !ok || idx >= st.NumField() {
				return nil, fmt.Errorf("key field %d: column layout does not match the schema", id)
			}
			parents = append(parents, arr)
			arr = st.Field(idx)
		}
		fn, err := value(arr, id)
		if err != nil {
			return nil, fmt.Errorf("key field %d: %w", id, err)
		}
		keys[i] = keyCol{name: name, parents: parents, value: fn}
	}
	return func(dst []byte, row int) []byte {
		dst = append(dst, '{')
		for _, k := range keys {
			dst = append(dst, k.name...)
			null := false
			for _, p := range k.parents {
				if p.IsNull(row) {
					null = true
					break
				}
			}
			if null {
				dst = append(dst, "null"...)
			} else {
				dst = k.value(dst, row)
			}
		}
		return append(dst, '}')
	}, nil
}

// holdsField says whether schema has a field id.
func holdsField(schema *iceberg.Schema, id int) bool {
	_, ok := schema.FindFieldByID(id)
	return ok
}

// fieldPath returns the indexes that lead from the top-level columns to the
// field with the given id, through structs only (a key inside a list or map
// has no single value per row).
func fieldPath(schema *iceberg.Schema, id int) ([]int, error) {
	var walk func(fields []iceberg.NestedField) []int
	walk = func(fields []iceberg.NestedField) []int {
		for i, f := range fields {
			if f.ID == id {
				return []int{i}
			}
			if st, ok := f.Type.(*iceberg.StructType); ok {
				if rest := walk(st.FieldList); rest != nil {
					return append([]int{i}, rest...)
				}
			}
		}
		return nil
	}
	if path := walk(schema.Fields()); path != nil {
		return path, nil
	}
	return nil, fmt.Errorf("key field id %d is not a top-level or struct field of schema %d", id, schema.ID)
}
