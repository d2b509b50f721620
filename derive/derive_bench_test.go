package derive

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/rs/zerolog"

	"github.com/lakegw/lakegw/changelog"
)

// benchRows is the size of the derivation-cost benchmark table
// (LAKEGW_BENCH_ROWS overrides the 5 million of issue 3).
func benchRows() int {
	if v, err := strconv.Atoi(os.Getenv("LAKEGW_BENCH_ROWS")); err == nil && v > 0 {
		return v
	}
	return 5_000_000
}

// buildBenchTable writes a table of n rows sorted by id in 10 appends (10
// data files, row groups of 100k rows), as a table fed by periodic commits.
func buildBenchTable(b *testing.B, props iceberg.Properties) *table.Table {
	b.Helper()
	n := benchRows()
	cat := newTestCatalog(b)
	props["write.parquet.row-group-limit"] = "100000"
	tbl, err := cat.CreateTable(context.Background(), table.Identifier{"ns", "bench"}, testSchema(), catalog.WithProperties(props))
	if err != nil {
		b.Fatal(err)
	}
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, false, false)
	if err != nil {
		b.Fatal(err)
	}
	files := 10
	per := n / files
	for f := range files {
		bld := array.NewRecordBuilder(memory.DefaultAllocator, sc)
		for i := f * per; i < (f+1)*per; i++ {
			bld.Field(0).(*array.Int64Builder).Append(int64(i))
			bld.Field(1).(*array.StringBuilder).Append("name-" + strconv.Itoa(i%1000))
			bld.Field(2).(*array.Decimal128Builder).Append(decimal128.FromI64(int64(i) * 3))
		}
		rec := bld.NewRecordBatch()
		bld.Release()
		data := array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
		tbl, err = tbl.AppendTable(context.Background(), data, int64(per), nil)
		data.Release()
		rec.Release()
		if err != nil {
			b.Fatal(err)
		}
	}
	return tbl
}

// benchDeleteCost reports derive time of the last snapshot against a full
// scan of it.
func benchDeleteCost(b *testing.B, tbl *table.Table, wantDeletes int) {
	ctx := context.Background()
	hist, err := changelog.MainHistory(tbl.Metadata())
	if err != nil {
		b.Fatal(err)
	}
	last := hist[len(hist)-1]
	// The fastest of three full scans of the same snapshot is the base.
	var scan time.Duration
	var scanRows int64
	for range 3 {
		start := time.Now()
		at, err := tbl.Scan(table.WithSnapshotID(last.SnapshotID)).ToArrowTable(ctx)
		if err != nil {
			b.Fatal(err)
		}
		took := time.Since(start)
		scanRows = at.NumRows()
		at.Release()
		if scan == 0 || took < scan {
			scan = took
		}
	}
	b.ResetTimer()
	var total, best time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		c, err := Derive(ctx, tbl, last, Options{Log: benchLog()})
		if err != nil {
			b.Fatal(err)
		}
		took := time.Since(start)
		total += took
		if best == 0 || took < best {
			best = took
		}
		if got := countOps(c)[changelog.OpDelete]; got != wantDeletes {
			b.Fatalf("%d deletes, want %d", got, wantDeletes)
		}
		c.Release()
	}
	b.StopTimer()
	b.ReportMetric(float64(best.Microseconds())/1000, "best-derive-ms")
	b.ReportMetric(float64(scan.Microseconds())/1000, "best-fullscan-ms")
	b.ReportMetric(100*float64(best)/float64(scan), "%-of-scan")
	b.Logf("%d-row table: derive best %v (mean %v), full scan best %v: %.1f %%",
		scanRows, best, total/time.Duration(b.N), scan, 100*float64(best)/float64(scan))
}

func BenchmarkDerivePositionDelete1000(b *testing.B) {
	tbl := buildBenchTable(b, iceberg.Properties{"format-version": "2", "write.delete.mode": "merge-on-read"})
	mid := int64(benchRows() / 2)
	var err error
	tbl, err = tbl.Delete(context.Background(), iceberg.NewAnd(
		iceberg.GreaterThanEqual(iceberg.Reference("id"), mid+10),
		iceberg.LessThan(iceberg.Reference("id"), mid+1010)), nil)
	if err != nil {
		b.Fatal(err)
	}
	benchDeleteCost(b, tbl, 1000)
}

func BenchmarkDeriveEqualityDelete1000(b *testing.B) {
	ctx := context.Background()
	tbl := buildBenchTable(b, iceberg.Properties{"format-version": "2"})
	mid := benchRows() / 2
	var js []byte
	js = append(js, '[')
	for i := range 1000 {
		if i > 0 {
			js = append(js, ',')
		}
		js = fmt.Appendf(js, `{"id":%d}`, mid+10+i)
	}
	js = append(js, ']')
	eqSchema, err := table.SchemaToArrowSchema(iceberg.NewSchema(0, testSchema().Fields()[0]), nil, false, false)
	if err != nil {
		b.Fatal(err)
	}
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, eqSchema, strings.NewReader(string(js)))
	if err != nil {
		b.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.CommitEqualityDeletes(ctx, []int{1}, batchesOf(rec), nil); err != nil {
		b.Fatal(err)
	}
	rec.Release()
	if tbl, err = tx.Commit(ctx); err != nil {
		b.Fatal(err)
	}
	benchDeleteCost(b, tbl, 1000)
}

// benchLog logs derivation details when LAKEGW_BENCH_LOG is set.
func benchLog() zerolog.Logger {
	if os.Getenv("LAKEGW_BENCH_LOG") == "" {
		return zerolog.Nop()
	}
	return zerolog.New(zerolog.ConsoleWriter{Out: os.Stderr}).Level(zerolog.DebugLevel)
}

// BenchmarkDeriveAppend derives the last append of the benchmark table
// (one data file of a tenth of its rows): "first read" decodes the file
// once more in the file check (issue 12, row 1), as the first derivation
// of a file in a process does; "checked" is every later one, which costs
// what a derivation cost before the check.
func BenchmarkDeriveAppend(b *testing.B) {
	tbl := buildBenchTable(b, iceberg.Properties{"format-version": "2"})
	hist, err := changelog.MainHistory(tbl.Metadata())
	if err != nil {
		b.Fatal(err)
	}
	last := hist[len(hist)-1]
	for _, first := range []bool{true, false} {
		name := map[bool]string{true: "first-read", false: "checked"}[first]
		b.Run(name, func(b *testing.B) {
			for range b.N {
				if first {
					filesChecked.forget()
				}
				c, err := Derive(context.Background(), tbl, last, Options{Log: benchLog()})
				if err != nil {
					b.Fatal(err)
				}
				c.Release()
			}
		})
	}
}

// BenchmarkDeriveAppendFiles derives one append of 8 data files of 25,000
// rows each: their files are read GOMAXPROCS at a time.
func BenchmarkDeriveAppendFiles(b *testing.B) {
	cat := newTestCatalog(b)
	sc := iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "v", Type: iceberg.PrimitiveTypes.String})
	tbl := createTable(b, cat, "files", sc)
	var sb strings.Builder
	sb.WriteByte('[')
	for i := range 200_000 {
		if i > 0 {
			sb.WriteByte(',')
		}
		fmt.Fprintf(&sb, `{"id":%d,"v":"value %d of the benchmark"}`, i, i)
	}
	sb.WriteByte(']')
	tbl = appendJSON(b, tbl, sb.String(), 25_000)
	hist, err := changelog.MainHistory(tbl.Metadata())
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		c, err := Derive(context.Background(), tbl, hist[0], Options{})
		if err != nil {
			b.Fatal(err)
		}
		if len(c.Records) != 200_000 {
			b.Fatalf("%d records", len(c.Records))
		}
		c.Release()
	}
}

// BenchmarkDeriveMergeOnReadHistory derives, in order, a merge-on-read
// history whose every snapshot adds a file and deletes one row in eight
// from each of the two newest files before it (as an order table's updates
// fall on recent orders), with and without a RowGroupCache: the cost of
// before-images read again from files the previous snapshots decoded.
func BenchmarkDeriveMergeOnReadHistory(b *testing.B) {
	const (
		fileRows  = 20_000
		snapshots = 8
	)
	cat := newTestCatalog(b)
	tbl := createTable(b, cat, "mor_history", testSchema(), catalog.WithProperties(iceberg.Properties{"format-version": "2"}))
	var files []string
	for k := range snapshots {
		dels := map[string][]int64{}
		for _, f := range files[max(len(files)-2, 0):] {
			for p := int64(k % 8); p < fileRows; p += 8 {
				dels[f] = append(dels[f], p)
			}
		}
		var added string
		tbl, added = rowDeltaCommit(b, tbl, jsonRows(k*fileRows, (k+1)*fileRows), dels)
		files = append(files, added)
	}
	hist, err := changelog.MainHistory(tbl.Metadata())
	if err != nil {
		b.Fatal(err)
	}
	for _, cached := range []bool{false, true} {
		name := "uncached"
		if cached {
			name = "cached"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var opts Options
				if cached {
					opts.RowGroups = NewRowGroupCache(64 << 20)
				}
				for _, snap := range hist {
					c, err := Derive(context.Background(), tbl, snap, opts)
					if err != nil {
						b.Fatal(err)
					}
					c.Release()
				}
			}
		})
	}
}
