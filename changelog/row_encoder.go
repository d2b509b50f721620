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
	for i, b := range c.Batches {
		row, err := RowAppender(b)
		if err != nil {
			return nil, fmt.Errorf("batch %d of %s snapshot %d: %w", i, c.Table, c.SnapshotID, err)
		}
		enc.batches[i].row = row
		if len(c.KeyFieldIDs) > 0 {
			key, err := KeyAppender(c.Schema, b, c.KeyFieldIDs)
			if err != nil {
				return nil, fmt.Errorf("key of batch %d of %s snapshot %d: %w", i, c.Table, c.SnapshotID, err)
			}
			enc.batches[i].key = key
		}
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
	return func(dst []byte, row int) []byte {
		dst = append(dst, '{')
		for i, col := range cols {
			dst = append(dst, names[i]...)
			dst = col(dst, row)
		}
		return append(dst, '}')
	}, nil
}

// KeyAppender returns a function that appends the key fields ids of a row
// of b as the JSON object the formats write as the record key. Nested key
// fields are named by their dotted path and are null when a parent is
// null. Exported for derive/, which pairs a removed and an added row of
// the same key JSON into one update.
func KeyAppender(schema *iceberg.Schema, b arrow.RecordBatch, ids []int) (func(dst []byte, row int) []byte, error) {
	type keyCol struct {
		name    []byte
		parents []arrow.Array
		value   appendFn
	}
	keys := make([]keyCol, len(ids))
	for i, id := range ids {
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
		value, err := newAppender(arr)
		if err != nil {
			return nil, fmt.Errorf("key field %d: %w", id, err)
		}
		name, _ := schema.FindColumnName(id)
		keys[i] = keyCol{name: appendObjectKey(nil, i == 0, name), parents: parents, value: value}
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
