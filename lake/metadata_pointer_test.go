package lake

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

var pointerSchema = iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})

// pointerTable creates ns.t in the embedded catalog under dir with n
// snapshots of one row each.
func pointerTable(tb testing.TB, dir string, n int) (catalog.Catalog, table.Identifier) {
	tb.Helper()
	ctx := context.Background()
	cat, err := OpenCatalog(ctx, dir, nil)
	if err != nil {
		tb.Fatal(err)
	}
	ident := table.Identifier{"ns", "t"}
	if err := cat.CreateNamespace(ctx, ident[:1], nil); err != nil {
		tb.Fatal(err)
	}
	tbl, err := cat.CreateTable(ctx, ident, pointerSchema)
	if err != nil {
		tb.Fatal(err)
	}
	sc, err := table.SchemaToArrowSchema(pointerSchema, nil, false, false)
	if err != nil {
		tb.Fatal(err)
	}
	for i := range n {
		b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
		b.Field(0).(*array.Int64Builder).Append(int64(i))
		rec := b.NewRecordBatch()
		at := array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
		tbl, err = tbl.AppendTable(ctx, at, 10, nil)
		at.Release()
		rec.Release()
		b.Release()
		if err != nil {
			tb.Fatal(err)
		}
	}
	return cat, ident
}

// The pointer is the metadata location LoadTable reads, before and after a
// commit by another catalog handle; an unknown table, or a catalog that is
// not a SQL one, gives no answer.
func TestMetadataPointerFollowsCommits(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cat, ident := pointerTable(t, dir, 1)
	p, err := OpenMetadataPointers(context.Background(), cat)
	if err != nil || p == nil {
		t.Fatalf("embedded catalog: pointers %v, %v", p, err)
	}
	defer p.Close()
	check := func() {
		t.Helper()
		tbl, err := cat.LoadTable(ctx, ident)
		if err != nil {
			t.Fatal(err)
		}
		loc, ok, err := p.Location(ctx, ident)
		if err != nil || !ok || loc != tbl.MetadataLocation() {
			t.Fatalf("pointer %q %v %v, LoadTable %q", loc, ok, err, tbl.MetadataLocation())
		}
	}
	check()
	other, err := OpenCatalog(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := other.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.SetProperties(iceberg.Properties{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	check()
	if loc, ok, err := p.Location(ctx, table.Identifier{"ns", "missing"}); err != nil || ok {
		t.Fatalf("missing table: %q %v %v", loc, ok, err)
	}
	if p, err := OpenMetadataPointers(context.Background(), struct{ catalog.Catalog }{cat}); p != nil || err != nil {
		t.Fatalf("a catalog lake did not open: %v %v, want none", p, err)
	}
}

// BenchmarkIdlePoll compares what a poll that finds nothing new costs:
// loading the table (read and parse the metadata JSON, which grows with
// the history) against reading its metadata pointer.
func BenchmarkIdlePoll(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{10, 300} {
		cat, ident := pointerTable(b, b.TempDir(), n)
		p, err := OpenMetadataPointers(context.Background(), cat)
		if err != nil || p == nil {
			b.Fatal(p, err)
		}
		b.Run(fmt.Sprintf("snapshots=%d/load", n), func(b *testing.B) {
			for range b.N {
				if _, err := cat.LoadTable(ctx, ident); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("snapshots=%d/pointer", n), func(b *testing.B) {
			for range b.N {
				if _, _, err := p.Location(ctx, ident); err != nil {
					b.Fatal(err)
				}
			}
		})
		p.Close()
	}
}
