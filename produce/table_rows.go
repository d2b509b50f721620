package produce

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// schemaRows are an append table topic's rows: each record, in the topic's
// format, is a row of the table's schema (inserts only: an append table
// has no key to update or delete by).
type schemaRows struct {
	format string
	// evolve adds the fields records bring as columns (ConfigAutoEvolve)
	// of the table at cat/ident.
	evolve bool
	cat    catalog.Catalog
	ident  table.Identifier

	// mu guards the schema, which evolution replaces while requests
	// prepare their batches.
	mu     sync.Mutex
	arrow  *arrow.Schema
	fields []iceberg.NestedField
}

func newSchemaRows(format string, sc *iceberg.Schema) (*schemaRows, error) {
	s := &schemaRows{format: format}
	return s, s.setSchema(sc)
}

// setSchema makes sc the schema rows are built in. Called with s.mu held
// (or before s is shared).
func (s *schemaRows) setSchema(sc *iceberg.Schema) error {
	as, err := table.SchemaToArrowSchema(sc, nil, true, false)
	if err != nil {
		return fmt.Errorf("arrow schema of schema %d: %w", sc.ID, err)
	}
	s.arrow, s.fields = as, sc.Fields()
	return nil
}

func (s *schemaRows) schema() *arrow.Schema {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.arrow
}

// prepare decodes every record to a row, refuses a field the table lacks,
// a missing required one or a value of the wrong type, and keeps the
// batch's rows as Arrow for the commit.
func (s *schemaRows) prepare(t *ticket) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var docs bytes.Buffer
	for i := range t.batch.Records {
		ops, err := rowOps(s.format, &t.batch.Records[i])
		if err != nil {
			return &RecordError{Index: i, Err: err}
		}
		if s.evolve {
			if err := s.evolveFor(ops); err != nil {
				return &RecordError{Index: i, Err: err}
			}
		}
		for _, op := range ops {
			if op.del {
				return &RecordError{Index: i, Err: errors.New("an append table topic takes inserts only: it has no key to update or delete by")}
			}
			if err := s.check(op.row); err != nil {
				return &RecordError{Index: i, Err: err}
			}
			b, err := json.Marshal(op.row)
			if err != nil {
				return &RecordError{Index: i, Err: err}
			}
			docs.Write(b)
			docs.WriteByte('\n')
		}
	}
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, s.arrow, &docs, array.WithMultipleDocs())
	if err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidRecord, err)
	}
	t.rec = rec
	return nil
}

// check refuses a row with a field the table lacks or without a value for
// a required column (Arrow's JSON reader would drop the one and leave the
// other null).
func (s *schemaRows) check(row map[string]any) error {
	for name := range row {
		if !slices.ContainsFunc(s.fields, func(f iceberg.NestedField) bool { return f.Name == name }) {
			names := make([]string, len(s.fields))
			for i, f := range s.fields {
				names[i] = f.Name
			}
			return fmt.Errorf("no column %q in the table (columns: %s)", name, strings.Join(names, ", "))
		}
	}
	for _, f := range s.fields {
		if f.Required && row[f.Name] == nil {
			return fmt.Errorf("column %q is required", f.Name)
		}
	}
	return nil
}

// rows are the rows prepare kept, in the order of the tickets, each in the
// current schema: a batch prepared before an evolution lacks the columns
// it added (appended at the end), which are null in its rows.
func (s *schemaRows) rows(_ int32, _ int64, tickets []*ticket) []arrow.RecordBatch {
	sc := s.schema()
	out := make([]arrow.RecordBatch, 0, len(tickets))
	for _, t := range tickets {
		if int(t.rec.NumCols()) == sc.NumFields() {
			t.rec.Retain() // WriteRecords releases what it consumes; a retry writes them again
			out = append(out, t.rec)
			continue
		}
		cols := make([]arrow.Array, sc.NumFields())
		for i := range cols {
			if i < int(t.rec.NumCols()) {
				cols[i] = t.rec.Column(i)
				cols[i].Retain()
			} else {
				cols[i] = array.MakeArrayOfNull(memory.DefaultAllocator, sc.Field(i).Type, int(t.rec.NumRows()))
			}
		}
		out = append(out, array.NewRecordBatch(sc, cols, t.rec.NumRows()))
		for _, c := range cols {
			c.Release()
		}
	}
	return out
}

// evolveFor adds the columns ops bring that the table lacks and builds
// rows in the new schema from now on. Called with s.mu held.
func (s *schemaRows) evolveFor(ops []rowOp) error {
	names := make([]string, len(s.fields))
	for i, f := range s.fields {
		names[i] = f.Name
	}
	cols, err := newColumns(names, ops)
	if err != nil {
		return err
	}
	for _, op := range ops {
		for name, v := range op.row {
			if v == nil && !slices.Contains(names, name) {
				delete(op.row, name) // a null says nothing of a column
			}
		}
	}
	if len(cols) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), evolveTimeout)
	defer cancel()
	if err := addColumns(ctx, s.cat, s.ident, cols); err != nil {
		return err
	}
	tbl, err := s.cat.LoadTable(ctx, s.ident)
	if err != nil {
		return err
	}
	return s.setSchema(tbl.Schema())
}
