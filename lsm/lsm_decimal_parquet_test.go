package lsm

import (
	"bytes"
	"context"
	"encoding/binary"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// The decimal columns lakegw writes with parquet-go read back exactly with
// pqarrow, and every statistic a reader prunes by is in signed order:
// chunk statistics of each row group and the column index of each page,
// checked against the values, for FIXED_LEN_BYTE_ARRAY (9 and 16 bytes),
// INT64 and INT32 decimals, with negative values, nulls and pages of nulls
// only, over several row groups of several pages.
func TestLsmDecimalParquetStatistics(t *testing.T) {
	cols := []pqCol{
		{name: "k", id: 1, kind: kDecimal, dec: mustDecType(t, 20, 4), required: true},
		{name: "b", id: 2, kind: kDecimal, dec: mustDecType(t, 38, 10)},
		{name: "p", id: 3, kind: kDecimal, dec: mustDecType(t, 12, 2)},
		{name: "q", id: 4, kind: kDecimal, dec: mustDecType(t, 9, 2), required: true},
	}
	const n, rowGroupRows = 150_000, 60_000
	r := rand.New(rand.NewPCG(5, 6))
	vals := make([][]*big.Int, len(cols)) // nil: null
	for c, col := range cols {
		vals[c] = make([]*big.Int, n)
		for i := range n {
			switch {
			case c == 1 && i < 55_000: // more than a page of nulls
			case !col.required && r.IntN(10) == 0:
			default:
				vals[c][i] = randUnscaled(r, col.dec.prec)
			}
		}
	}
	body, err := encodeRows(cols, n, rowGroupRows, func(row, c int) any {
		if v := vals[c][row]; v != nil {
			return Decimal{Unscaled: decimal128.FromBigInt(v), Scale: cols[c].dec.scale}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	pf, err := file.NewParquetReader(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()

	// Values.
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 1 << 20}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	for c := range cols {
		row := 0
		for _, chunk := range tbl.Column(c).Data().Chunks() {
			a := chunk.(*array.Decimal128)
			for i := 0; i < a.Len(); i++ {
				want := vals[c][row]
				if a.IsNull(i) != (want == nil) || want != nil && a.Value(i).BigInt().Cmp(want) != 0 {
					t.Fatalf("column %s row %d: read %v, wrote %v", cols[c].name, row, a.Value(i).BigInt(), want)
				}
				row++
			}
		}
	}

	// Statistics.
	meta := pf.MetaData()
	if meta.NumRowGroups() != 3 {
		t.Fatalf("%d row groups", meta.NumRowGroups())
	}
	pir := pf.GetPageIndexReader()
	pages := map[string]int{}
	first := 0
	for rg := 0; rg < meta.NumRowGroups(); rg++ {
		rgm := meta.RowGroup(rg)
		rows := int(rgm.NumRows())
		rgi, err := pir.RowGroup(rg)
		if err != nil {
			t.Fatal(err)
		}
		for c, col := range cols {
			cc, err := rgm.ColumnChunk(c)
			if err != nil {
				t.Fatal(err)
			}
			if ok, err := cc.StatsSet(); !ok || err != nil {
				t.Fatalf("row group %d column %s: no statistics (%v)", rg, col.name, err)
			}
			st, err := cc.Statistics()
			if err != nil {
				t.Fatal(err)
			}
			enc, err := st.Encode()
			if err != nil {
				t.Fatal(err)
			}
			lo, hi, nulls, _ := valueRange(vals[c][first : first+rows])
			if got := decodeStat(t, col, enc.Min); got.Cmp(lo) != 0 {
				t.Errorf("row group %d column %s: min %v, want %v", rg, col.name, got, lo)
			}
			if got := decodeStat(t, col, enc.Max); got.Cmp(hi) != 0 {
				t.Errorf("row group %d column %s: max %v, want %v", rg, col.name, got, hi)
			}
			if st.NullCount() != int64(nulls) {
				t.Errorf("row group %d column %s: %d nulls, want %d", rg, col.name, st.NullCount(), nulls)
			}

			ci, err := rgi.GetColumnIndex(c)
			if err != nil || ci == nil {
				t.Fatalf("row group %d column %s: column index %v", rg, col.name, err)
			}
			oi, err := rgi.GetOffsetIndex(c)
			if err != nil || oi == nil {
				t.Fatalf("row group %d column %s: offset index %v", rg, col.name, err)
			}
			locs := oi.GetPageLocations()
			pages[col.name] += len(locs)
			nullPages, mins, maxs := ci.GetNullPages(), ci.GetMinValues(), ci.GetMaxValues()
			if len(nullPages) != len(locs) || len(mins) != len(locs) || len(maxs) != len(locs) {
				t.Fatalf("row group %d column %s: %d pages, column index of %d/%d/%d", rg, col.name, len(locs), len(nullPages), len(mins), len(maxs))
			}
			for p, loc := range locs {
				end := rows
				if p+1 < len(locs) {
					end = int(locs[p+1].FirstRowIndex)
				}
				page := vals[c][first+int(loc.FirstRowIndex) : first+end]
				lo, hi, nulls, allNull := valueRange(page)
				if nullPages[p] != allNull || ci.GetNullCounts()[p] != int64(nulls) {
					t.Errorf("row group %d column %s page %d: null page %v, %d nulls; want %v, %d", rg, col.name, p, nullPages[p], ci.GetNullCounts()[p], allNull, nulls)
				}
				if allNull {
					continue
				}
				if got := decodeStat(t, col, mins[p]); got.Cmp(lo) != 0 {
					t.Errorf("row group %d column %s page %d: min %v, want %v", rg, col.name, p, got, lo)
				}
				if got := decodeStat(t, col, maxs[p]); got.Cmp(hi) != 0 {
					t.Errorf("row group %d column %s page %d: max %v, want %v", rg, col.name, p, got, hi)
				}
			}
			if bo := ci.GetBoundaryOrder(); col.dec.size > 8 && bo != metadata.Unordered {
				t.Errorf("row group %d column %s: boundary order %v", rg, col.name, bo)
			}
		}
		first += rows
	}
	if pages["k"] < 2*meta.NumRowGroups() || pages["b"] < 2*meta.NumRowGroups() {
		t.Errorf("pages per column %v: want several per row group", pages)
	}
	// The first page of b holds nulls only.
	rgi, _ := pir.RowGroup(0)
	if ci, _ := rgi.GetColumnIndex(1); !ci.GetNullPages()[0] {
		t.Error("column b: the first page is not a null page")
	}
}

// valueRange is the min, max and null count of values (nil: null), and
// whether all are null.
func valueRange(vals []*big.Int) (lo, hi *big.Int, nulls int, allNull bool) {
	for _, v := range vals {
		if v == nil {
			nulls++
			continue
		}
		if lo == nil || v.Cmp(lo) < 0 {
			lo = v
		}
		if hi == nil || v.Cmp(hi) > 0 {
			hi = v
		}
	}
	return lo, hi, nulls, lo == nil
}

// decodeStat reads a plain-encoded statistic of a decimal column: INT32 or
// INT64 little-endian, or big-endian two's complement bytes.
func decodeStat(t *testing.T, col pqCol, b []byte) *big.Int {
	t.Helper()
	switch {
	case col.dec.prec <= 9 && len(b) == 4:
		return big.NewInt(int64(int32(binary.LittleEndian.Uint32(b))))
	case col.dec.prec > 9 && col.dec.prec <= 18 && len(b) == 8:
		return big.NewInt(int64(binary.LittleEndian.Uint64(b)))
	case col.dec.prec > 18 && len(b) == col.dec.size:
		v := new(big.Int).SetBytes(b)
		if b[0]&0x80 != 0 {
			v.Sub(v, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
		}
		return v
	}
	t.Fatalf("column %s: statistic of %d bytes %x", col.name, len(b), b)
	return nil
}
