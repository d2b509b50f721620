package derive

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/changelog"
)

// checkRowsAt reads positions of every data file of the snapshot with the
// selective reader and with iceberg-go's row group read, and compares the
// rows value by value. It returns how many files the selective reader took.
func checkRowsAt(t *testing.T, tbl *table.Table, snapshotID int64, rng *rand.Rand) (took, declined int) {
	t.Helper()
	ctx := context.Background()
	scan := tbl.Scan(table.WithSnapshotID(snapshotID))
	tasks, err := scan.PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range tasks {
		n := task.File.Count()
		if n == 0 {
			continue
		}
		// The first and last rows, a run, and a random sparse sample.
		pick := map[int64]bool{0: true, n - 1: true}
		for p := n / 3; p < min(n, n/3+5); p++ {
			pick[p] = true
		}
		for range min(n, 40) {
			pick[rng.Int64N(n)] = true
		}
		var positions []int64
		for p := range n {
			if pick[p] {
				positions = append(positions, p)
			}
		}
		d, err := openDataFile(fs, task.File)
		if err != nil {
			t.Fatal(err)
		}
		got, err := readFlatRowsAt(ctx, scan, d, task.File, positions)
		if errors.Is(err, errNotFlat) {
			d.Close()
			declined++
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", task.File.FilePath(), err)
		}
		took++
		layout, err := rowGroupLayoutOf(d, task.File)
		d.Close()
		if err != nil {
			t.Fatal(err)
		}
		batches, rows, err := readRowGroupsAt(ctx, fs, scan, task, layout, positions)
		if err != nil {
			t.Fatal(err)
		}
		if !got.Schema().Equal(batches[0].Schema()) {
			t.Fatalf("%s: schema\n%s\nwant\n%s", task.File.FilePath(), got.Schema(), batches[0].Schema())
		}
		i := 0
		for bi, b := range batches {
			for _, r := range rows[bi] {
				for c := range int(b.NumCols()) {
					want, have := b.Column(c), got.Column(c)
					if !array.SliceEqual(want, int64(r), int64(r)+1, have, int64(i), int64(i)+1) {
						t.Errorf("%s: position %d column %s: got %s want %s", task.File.FilePath(), positions[i],
							b.ColumnName(c), have.ValueStr(i), want.ValueStr(int(r)))
					}
				}
				i++
			}
		}
		if i != len(positions) || got.NumRows() != int64(len(positions)) {
			t.Errorf("%s: %d rows, old reader %d, want %d", task.File.FilePath(), got.NumRows(), i, len(positions))
		}
		got.Release()
		releaseAll(batches)
		checkDenseRowsAt(t, fs, scan, task)
	}
	return took, declined
}

// checkDenseRowsAt reads one row in three of a flat file through readRowsAt
// with a row group cache, twice (decoded whole and cached, then taken from
// the cache), and compares the rows with iceberg-go's row group read.
func checkDenseRowsAt(t *testing.T, fs icebergio.IO, scan *table.Scan, task table.FileScanTask) {
	t.Helper()
	ctx := context.Background()
	var positions []int64
	for p := int64(0); p < task.File.Count(); p += 3 {
		positions = append(positions, p)
	}
	d, err := openDataFile(fs, task.File)
	if err != nil {
		t.Fatal(err)
	}
	layout, err := rowGroupLayoutOf(d, task.File)
	d.Close()
	if err != nil {
		t.Fatal(err)
	}
	want, wantRows, err := readRowGroupsAt(ctx, fs, scan, task, layout, positions)
	if err != nil {
		t.Fatal(err)
	}
	defer releaseAll(want)
	cache := NewRowGroupCache(64 << 20)
	for pass := range 2 {
		got, gotRows, err := readRowsAt(ctx, fs, scan, task, positions, cache.derivation("t"))
		if err != nil {
			t.Fatalf("%s: pass %d: %v", task.File.FilePath(), pass, err)
		}
		type at struct {
			b arrow.RecordBatch
			r int
		}
		flat := func(bs []arrow.RecordBatch, rows [][]int32) []at {
			var out []at
			for i, b := range bs {
				for _, r := range rows[i] {
					out = append(out, at{b, int(r)})
				}
			}
			return out
		}
		w, g := flat(want, wantRows), flat(got, gotRows)
		if len(w) != len(g) {
			t.Fatalf("%s: pass %d: %d rows, want %d", task.File.FilePath(), pass, len(g), len(w))
		}
		for i := range w {
			if !w[i].b.Schema().Equal(g[i].b.Schema()) {
				t.Fatalf("%s: schema\n%s\nwant\n%s", task.File.FilePath(), g[i].b.Schema(), w[i].b.Schema())
			}
			for c := range int(w[i].b.NumCols()) {
				if !array.SliceEqual(w[i].b.Column(c), int64(w[i].r), int64(w[i].r)+1, g[i].b.Column(c), int64(g[i].r), int64(g[i].r)+1) {
					t.Errorf("%s: pass %d: position %d column %s: got %s want %s", task.File.FilePath(), pass, positions[i],
						w[i].b.ColumnName(c), g[i].b.Column(c).ValueStr(g[i].r), w[i].b.Column(c).ValueStr(w[i].r))
				}
			}
		}
		releaseAll(got)
	}
	if hits, _, _ := cache.Stats(); hits == 0 && len(positions) > 0 {
		// A file the selective reader declines is read by iceberg-go,
		// uncached; one it takes must be served from the cache the
		// second time.
		if d, err := openDataFile(fs, task.File); err == nil {
			_, err := readFlatRowsAt(ctx, scan, d, task.File, positions[:1])
			d.Close()
			if err == nil {
				t.Errorf("%s: second read not served from the row group cache", task.File.FilePath())
			}
		}
	}
}

func TestReadFlatRowsAtFixtures(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, f := range fixtures {
		if f.damaged != "" {
			continue
		}
		t.Run(f.name, func(t *testing.T) {
			tbl := openFixture(t, f)
			hist, err := changelog.MainHistory(tbl.Metadata())
			if err != nil {
				t.Fatal(err)
			}
			var took, declined int
			for _, s := range hist {
				a, d := checkRowsAt(t, tbl, s.SnapshotID, rng)
				took += a
				declined += d
			}
			t.Logf("selective reader read %d files, declined %d", took, declined)
		})
	}
}

// TestReadFlatRowsAtEvolution compares the selective reader with
// iceberg-go on files of an older schema read under a newer one (renamed,
// promoted, added with a default, dropped columns), nulls, several row
// groups and pages, and every flat type.
func TestReadFlatRowsAtEvolution(t *testing.T) {
	ctx := context.Background()
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "b", Type: iceberg.PrimitiveTypes.Bool},
		iceberg.NestedField{ID: 3, Name: "i", Type: iceberg.PrimitiveTypes.Int32},
		iceberg.NestedField{ID: 4, Name: "f", Type: iceberg.PrimitiveTypes.Float32},
		iceberg.NestedField{ID: 5, Name: "d", Type: iceberg.PrimitiveTypes.Float64},
		iceberg.NestedField{ID: 6, Name: "dec", Type: iceberg.DecimalTypeOf(20, 3)},
		iceberg.NestedField{ID: 7, Name: "dec9", Type: iceberg.DecimalTypeOf(9, 2)},
		iceberg.NestedField{ID: 8, Name: "date", Type: iceberg.PrimitiveTypes.Date},
		iceberg.NestedField{ID: 9, Name: "time", Type: iceberg.PrimitiveTypes.Time},
		iceberg.NestedField{ID: 10, Name: "ts", Type: iceberg.PrimitiveTypes.Timestamp},
		iceberg.NestedField{ID: 11, Name: "tstz", Type: iceberg.PrimitiveTypes.TimestampTz},
		iceberg.NestedField{ID: 12, Name: "s", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 13, Name: "fixed", Type: iceberg.FixedTypeOf(2)},
		iceberg.NestedField{ID: 14, Name: "bin", Type: iceberg.PrimitiveTypes.Binary},
		iceberg.NestedField{ID: 15, Name: "gone", Type: iceberg.PrimitiveTypes.String},
	)
	cat := newTestCatalog(t)
	tbl := createTable(t, cat, "evolve_rows_at", sc, catalog.WithProperties(iceberg.Properties{
		"write.parquet.row-group-limit": "700", "write.parquet.page-row-limit": "100", "write.parquet.page-size-bytes": "512",
	}))
	var sb strings.Builder
	sb.WriteString("[")
	for i := range 3000 {
		if i > 0 {
			sb.WriteString(",")
		}
		if i%7 == 3 {
			fmt.Fprintf(&sb, `{"id":%d}`, i)
			continue
		}
		fmt.Fprintf(&sb, `{"id":%d,"b":%t,"i":%d,"f":%d.5,"d":-%d.25,"dec":"%d.%03d","dec9":"-%d.%02d","date":"2024-02-%02d",`+
			`"time":"13:14:%02d.016","ts":"2020-12-30 12:13:%02d.123456","tstz":"2020-12-30T12:13:%02d.5Z","s":"s%d","fixed":"AAE=","bin":"aGk=","gone":"g%d"}`,
			i, i%2 == 0, i-1500, i, i, i*1000003, i%1000, i, i%100, 1+i%28, i%60, i%60, i%60, i%13, i)
	}
	sb.WriteString("]")
	tbl = appendJSON(t, tbl, sb.String(), 0)
	rng := rand.New(rand.NewPCG(3, 4))
	if took, _ := checkRowsAt(t, tbl, tbl.CurrentSnapshot().SnapshotID, rng); took == 0 {
		t.Fatal("selective reader declined the table")
	}

	tx := tbl.NewTransaction()
	u := table.NewUpdateSchema(tx, true, false)
	u.RenameColumn([]string{"s"}, "label")
	u.UpdateColumn([]string{"i"}, table.ColumnUpdate{FieldType: iceberg.Optional[iceberg.Type]{Valid: true, Val: iceberg.PrimitiveTypes.Int64}})
	u.UpdateColumn([]string{"f"}, table.ColumnUpdate{FieldType: iceberg.Optional[iceberg.Type]{Valid: true, Val: iceberg.PrimitiveTypes.Float64}})
	u.UpdateColumn([]string{"dec9"}, table.ColumnUpdate{FieldType: iceberg.Optional[iceberg.Type]{Valid: true, Val: iceberg.DecimalTypeOf(19, 2)}})
	u.DeleteColumn([]string{"gone"})
	u.AddColumn([]string{"added"}, iceberg.PrimitiveTypes.String, "", false, nil)
	if err := u.Commit(); err != nil {
		t.Fatal(err)
	}
	var err error
	if tbl, err = tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	tbl = appendJSON(t, tbl, `[{"id":5000,"label":"x","i":5000000000,"added":"n"}]`, 0)
	if took, _ := checkRowsAt(t, tbl, tbl.CurrentSnapshot().SnapshotID, rng); took < 2 {
		t.Fatalf("selective reader took %d files, want 2", took)
	}
}
