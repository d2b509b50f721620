package lsm

import (
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	icebergio "github.com/apache/iceberg-go/io"
	pqgo "github.com/parquet-go/parquet-go"
)

// bloomProbeMax is how many candidate keys a lookup checks against a file's
// bloom filters before it decodes the file: point lookups and small
// commits skip files that merely overlap their key range; large commits
// decode (and cache) the file, which answers every key at once.
const bloomProbeMax = 64

// bloomCandidates returns the candidates (indexes into keyRows) that the
// file's bloom filters on the key columns do not rule out. A file or row
// group without a filter rules nothing out.
func bloomCandidates(fs icebergio.IO, sp *spec, path string, keyRows []Row, cand []int) ([]int, error) {
	pf, err := openParquet(fs, path)
	if err != nil {
		return nil, err
	}
	defer pf.Close()
	meta := pf.MetaData()
	cols := make([]int, len(sp.keyIdx))
	for i, ci := range sp.keyIdx {
		cols[i] = meta.Schema.ColumnIndexByName(sp.names[ci])
		if cols[i] < 0 {
			return cand, nil
		}
	}
	bfr := pf.GetBloomFilterReader()
	maybe := make([]bool, len(keyRows))
	for rg := 0; rg < meta.NumRowGroups(); rg++ {
		rgr, err := bfr.RowGroup(rg)
		if err != nil {
			return cand, nil
		}
		filters := make([]metadata.BloomFilter, len(cols))
		for i, c := range cols {
			if filters[i], err = rgr.GetColumnBloomFilter(c); err != nil || filters[i] == nil {
				return cand, nil
			}
		}
		for _, k := range cand {
			if maybe[k] {
				continue
			}
			all := true
			for i, ci := range sp.keyIdx {
				if !bloomCheck(filters[i], keyRows[k][ci], sp.decs[ci]) {
					all = false
					break
				}
			}
			maybe[k] = all
		}
	}
	out := cand[:0:0]
	for _, k := range cand {
		if maybe[k] {
			out = append(out, k)
		}
	}
	return out, nil
}

// bloomCheck hashes a canonical value as Parquet stores it (dec is the
// type of a decimal column: its physical type is the one hashed).
func bloomCheck(bf metadata.BloomFilter, v any, dec decType) bool {
	h := bf.Hasher()
	var hash uint64
	switch x := v.(type) {
	case Decimal:
		pv, err := decimalValue(x, dec)
		if err != nil {
			return true // not a value of the column: rule nothing out
		}
		switch pv.Kind() {
		case pqgo.Int32:
			hash = metadata.GetHash(h, pv.Int32())
		case pqgo.Int64:
			hash = metadata.GetHash(h, pv.Int64())
		default:
			hash = metadata.GetHash(h, parquet.FixedLenByteArray(pv.ByteArray()))
		}
	case int32:
		hash = metadata.GetHash(h, x)
	case int64:
		hash = metadata.GetHash(h, x)
	case float32:
		hash = metadata.GetHash(h, x)
	case float64:
		hash = metadata.GetHash(h, x)
	case string:
		hash = metadata.GetHash(h, parquet.ByteArray(x))
	case []byte:
		hash = metadata.GetHash(h, parquet.ByteArray(x))
	default:
		return true
	}
	return bf.CheckHash(hash)
}
