package produce

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// schemaRows are an append table topic's rows: each record, in the topic's
// format, is a row of the table's schema (inserts only: an append table
// has no key to update or delete by).
type schemaRows struct {
	format string
	arrow  *arrow.Schema
	fields []iceberg.NestedField
}

func newSchemaRows(format string, sc *iceberg.Schema) (*schemaRows, error) {
	as, err := table.SchemaToArrowSchema(sc, nil, true, false)
	if err != nil {
		return nil, fmt.Errorf("arrow schema of schema %d: %w", sc.ID, err)
	}
	return &schemaRows{format: format, arrow: as, fields: sc.Fields()}, nil
}

func (s *schemaRows) schema() *arrow.Schema { return s.arrow }

// prepare decodes every record to a row, refuses a field the table lacks,
// a missing required one or a value of the wrong type, and keeps the
// batch's rows as Arrow for the commit.
func (s *schemaRows) prepare(t *ticket) error {
	var docs bytes.Buffer
	for i := range t.batch.Records {
		ops, err := rowOps(s.format, &t.batch.Records[i])
		if err != nil {
			return &RecordError{Index: i, Err: err}
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

// rows are the rows prepare kept, in the order of the tickets.
func (s *schemaRows) rows(_ int32, _ int64, tickets []*ticket) []arrow.RecordBatch {
	out := make([]arrow.RecordBatch, 0, len(tickets))
	for _, t := range tickets {
		t.rec.Retain() // WriteRecords releases what it consumes; a retry writes them again
		out = append(out, t.rec)
	}
	return out
}
