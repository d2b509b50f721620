package lsm

import (
	"bytes"
	"fmt"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding"
	"github.com/parquet-go/parquet-go/format"
)

// Decimal columns in the Parquet files lakegw writes. The Iceberg spec
// maps decimal(P, S) to DECIMAL(P, S) on INT32 for P <= 9, INT64 for
// P <= 18 and FIXED_LEN_BYTE_ARRAY of the fewest bytes that hold P digits
// otherwise: the unscaled value, big-endian two's complement.
//
// The Parquet spec orders DECIMAL values by their signed value, whatever
// the physical type. parquet-go does for INT32 and INT64, but orders
// FIXED_LEN_BYTE_ARRAY as unsigned bytes whatever the logical type, so a
// negative decimal would be the maximum of its page and chunk: wrong
// statistics, from which iceberg-go would derive wrong manifest bounds and
// any reader would skip row groups and pages that hold the values it asks
// for. signedFixedType is parquet-go's FIXED_LEN_BYTE_ARRAY DECIMAL with
// the signed order everywhere the writer derives statistics: page bounds
// (page header and chunk statistics), the comparison that merges page
// bounds into chunk statistics, and the column index.

// decimalNode is the Parquet type of a decimal column of type d.
func decimalNode(d decType) (parquet.Node, error) {
	if d.prec < 1 || d.prec > maxDecimalPrecision || d.scale < 0 || d.scale > d.prec || d.size < 1 || d.size > 16 {
		return nil, fmt.Errorf("no Parquet type for %s", d)
	}
	switch {
	case d.prec <= 9:
		return parquet.Decimal(int(d.scale), int(d.prec), parquet.Int32Type), nil
	case d.prec <= 18:
		return parquet.Decimal(int(d.scale), int(d.prec), parquet.Int64Type), nil
	}
	base := parquet.Decimal(int(d.scale), int(d.prec), parquet.FixedLenByteArrayType(d.size)).Type()
	return parquet.Leaf(signedFixedType{base}), nil
}

// decimalValue is the Parquet value of a decimal of type d, in the
// physical type decimalNode gives d.
func decimalValue(x Decimal, d decType) (parquet.Value, error) {
	if !d.fits(x) {
		return parquet.Value{}, fmt.Errorf("%s (scale %d) is not a %s value", x, x.Scale, d)
	}
	switch {
	case d.prec <= 9:
		return parquet.Int32Value(int32(x.Unscaled.LowBits())), nil
	case d.prec <= 18:
		return parquet.Int64Value(int64(x.Unscaled.LowBits())), nil
	}
	return parquet.FixedLenByteArrayValue(decimalFixed(x.Unscaled, d.size)), nil
}

// compareSigned orders two big-endian two's complement integers of one
// length: by sign, then (same sign, same length) as unsigned bytes.
func compareSigned(a, b []byte) int {
	if len(a) == 0 || len(b) == 0 {
		return len(a) - len(b)
	}
	if an, bn := a[0]&0x80 != 0, b[0]&0x80 != 0; an != bn {
		if an {
			return -1
		}
		return 1
	}
	return bytes.Compare(a, b)
}

// signedFixedType is a FIXED_LEN_BYTE_ARRAY DECIMAL type whose statistics
// order values as signed integers. Everything else is parquet-go's.
type signedFixedType struct{ parquet.Type }

func (t signedFixedType) Compare(a, b parquet.Value) int {
	return compareSigned(a.ByteArray(), b.ByteArray())
}

func (t signedFixedType) NewColumnIndexer(int) parquet.ColumnIndexer {
	return &signedFixedIndexer{}
}

func (t signedFixedType) NewColumnBuffer(columnIndex, numValues int) parquet.ColumnBuffer {
	return signedFixedBuffer{t.Type.NewColumnBuffer(columnIndex, numValues)}
}

func (t signedFixedType) NewPage(columnIndex, numValues int, data encoding.Values) parquet.Page {
	return signedFixedPage{t.Type.NewPage(columnIndex, numValues, data)}
}

// signedFixedBuffer is parquet-go's column buffer whose pages have signed
// bounds. The writer wraps it for optional columns, and the wrapper's
// pages take their bounds from these.
type signedFixedBuffer struct{ parquet.ColumnBuffer }

func (b signedFixedBuffer) Page() parquet.Page { return signedFixedPage{b.ColumnBuffer.Page()} }

func (b signedFixedBuffer) Clone() parquet.ColumnBuffer {
	return signedFixedBuffer{b.ColumnBuffer.Clone()}
}

// signedFixedPage is a page with signed bounds.
type signedFixedPage struct{ parquet.Page }

func (p signedFixedPage) Bounds() (lo, hi parquet.Value, ok bool) {
	values := p.Data()
	data, size := values.FixedLenByteArray()
	if size <= 0 || len(data) < size {
		return lo, hi, false
	}
	minV, maxV := data[:size], data[:size]
	for i := size; i+size <= len(data); i += size {
		v := data[i : i+size]
		if compareSigned(v, minV) < 0 {
			minV = v
		}
		if compareSigned(v, maxV) > 0 {
			maxV = v
		}
	}
	return parquet.FixedLenByteArrayValue(minV), parquet.FixedLenByteArrayValue(maxV), true
}

func (p signedFixedPage) Slice(i, j int64) parquet.Page { return signedFixedPage{p.Page.Slice(i, j)} }

// signedFixedIndexer builds the column index (page index) of a signed
// FIXED_LEN_BYTE_ARRAY column from the pages' signed bounds. Pages of
// nulls only get empty bounds, as the spec asks, and the boundary order
// is UNORDERED, which promises readers nothing.
type signedFixedIndexer struct {
	nullPages  []bool
	nullCounts []int64
	mins, maxs [][]byte
}

func (i *signedFixedIndexer) Reset() {
	i.nullPages, i.nullCounts, i.mins, i.maxs = i.nullPages[:0], i.nullCounts[:0], i.mins[:0], i.maxs[:0]
}

func (i *signedFixedIndexer) IndexPage(numValues, numNulls int64, lo, hi parquet.Value) {
	nullPage := numValues == numNulls
	i.nullPages = append(i.nullPages, nullPage)
	i.nullCounts = append(i.nullCounts, numNulls)
	// A page with values always has bounds: lakegw never asks the writer
	// to skip them (parquet.SkipPageBounds).
	if nullPage || lo.IsNull() || hi.IsNull() {
		i.mins, i.maxs = append(i.mins, []byte{}), append(i.maxs, []byte{})
		return
	}
	i.mins = append(i.mins, bytes.Clone(lo.ByteArray()))
	i.maxs = append(i.maxs, bytes.Clone(hi.ByteArray()))
}

func (i *signedFixedIndexer) ColumnIndex() format.ColumnIndex {
	return format.ColumnIndex{
		NullPages:     append([]bool(nil), i.nullPages...),
		MinValues:     append([][]byte(nil), i.mins...),
		MaxValues:     append([][]byte(nil), i.maxs...),
		BoundaryOrder: format.Unordered,
		NullCounts:    append([]int64(nil), i.nullCounts...),
	}
}
