package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/lake"
)

// row is one row of the e2e table, the oracle the topic is checked against.
type row struct {
	ID     int64
	Name   string
	Amount float64
}

// snapshotRows is what one committed snapshot appended.
type snapshotRows struct {
	SnapshotID     int64
	SequenceNumber int64
	TimestampMs    int64
	Rows           []row
}

var eventsSchema = iceberg.NewSchemaWithIdentifiers(0, []int{1},
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String},
	iceberg.NestedField{ID: 3, Name: "amount", Type: iceberg.PrimitiveTypes.Float64},
)

// tableWriter appends snapshots to a table of the gateway's embedded
// catalog, from the test process, as any other writer of the lake would.
type tableWriter struct {
	t     *testing.T
	cat   catalog.Catalog
	ident table.Identifier
	next  int64
	Snaps []snapshotRows
}

func newTableWriter(t *testing.T, dataDir, ns, name string) *tableWriter {
	t.Helper()
	cat, err := lake.OpenCatalog(context.Background(), dataDir, nil)
	if err != nil {
		t.Fatal(err)
	}
	return newTableWriterOn(t, cat, ns, name)
}

// newTableWriterOn creates the table in any catalog.
func newTableWriterOn(t *testing.T, cat catalog.Catalog, ns, name string) *tableWriter {
	t.Helper()
	ctx := context.Background()
	if err := cat.CreateNamespace(ctx, table.Identifier{ns}, nil); err != nil {
		t.Logf("create namespace: %v (continuing)", err)
	}
	ident := table.Identifier{ns, name}
	if _, err := cat.CreateTable(ctx, ident, eventsSchema, catalog.WithProperties(iceberg.Properties{"format-version": "2"})); err != nil {
		t.Fatalf("create table: %v", err)
	}
	return &tableWriter{t: t, cat: cat, ident: ident, next: 1}
}

// appendRows commits one snapshot of n new rows and returns it.
func (w *tableWriter) appendRows(n int) snapshotRows {
	w.t.Helper()
	ctx := context.Background()
	rows := make([]row, n)
	for i := range rows {
		id := w.next
		w.next++
		rows[i] = row{ID: id, Name: fmt.Sprintf("name-%d", id), Amount: float64(id) * 1.25}
	}
	sc, err := table.SchemaToArrowSchema(eventsSchema, nil, false, false)
	if err != nil {
		w.t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for _, r := range rows {
		b.Field(0).(*array.Int64Builder).Append(r.ID)
		b.Field(1).(*array.StringBuilder).Append(r.Name)
		b.Field(2).(*array.Float64Builder).Append(r.Amount)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	tbl := array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
	defer tbl.Release()
	for attempt := 0; ; attempt++ {
		cur, err := w.cat.LoadTable(ctx, w.ident)
		if err != nil {
			w.t.Fatal(err)
		}
		next, err := cur.AppendTable(ctx, tbl, int64(n)+1, nil)
		if err != nil {
			if attempt < 5 {
				time.Sleep(50 * time.Millisecond)
				continue
			}
			w.t.Fatalf("append: %v", err)
		}
		s := next.CurrentSnapshot()
		out := snapshotRows{SnapshotID: s.SnapshotID, SequenceNumber: s.SequenceNumber, TimestampMs: s.TimestampMs, Rows: rows}
		w.Snaps = append(w.Snaps, out)
		return out
	}
}

// allRows returns every appended row in offset order.
func (w *tableWriter) allRows() []row {
	var out []row
	for _, s := range w.Snaps {
		out = append(out, s.Rows...)
	}
	return out
}
