package files

import (
	"bytes"
	"context"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	icebergio "github.com/apache/iceberg-go/io"
)

// ReadPositionDeletes returns the positions a position delete file
// deletes, by data file path, in file order. It reads the (file_path, pos)
// rows with column chunk readers: file paths are compared as the bytes the
// decoder hands out (for dictionary pages, slices of the dictionary), so
// only a new path is copied, and no Arrow arrays are built.
func ReadPositionDeletes(ctx context.Context, fs icebergio.IO, path string) (_ map[string][]int64, err error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	pf, err := file.NewParquetReader(f, file.WithReadProps(parquet.NewReaderProperties(compute.GetAllocator(ctx))))
	if err != nil {
		return nil, err
	}
	defer pf.Close()
	// Columns by field id (Spark may add a "row" column; names are
	// fixed by the spec but ids are what identify them).
	sc := pf.MetaData().Schema
	pathCol, posCol := -1, -1
	for i := range sc.NumColumns() {
		switch sc.Column(i).SchemaNode().FieldID() {
		case PosDeleteFilePathID:
			pathCol = i
		case PosDeletePosID:
			posCol = i
		}
	}
	if pathCol < 0 || posCol < 0 {
		for i := range sc.NumColumns() {
			switch sc.Column(i).Name() {
			case "file_path":
				pathCol = i
			case "pos":
				posCol = i
			}
		}
	}
	if pathCol < 0 || posCol < 0 {
		return nil, fmt.Errorf("no file_path and pos columns")
	}
	pathDescr, posDescr := sc.Column(pathCol), sc.Column(posCol)
	if pathDescr.PhysicalType() != parquet.Types.ByteArray || posDescr.PhysicalType() != parquet.Types.Int64 ||
		pathDescr.MaxRepetitionLevel() != 0 || posDescr.MaxRepetitionLevel() != 0 {
		return nil, fmt.Errorf("file_path/pos columns have types %s/%s", pathDescr.PhysicalType(), posDescr.PhysicalType())
	}
	pathMaxDef, posMaxDef := int16(pathDescr.MaxDefinitionLevel()), int16(posDescr.MaxDefinitionLevel())

	out := map[string][]int64{}
	var (
		key  string // the current run's path
		keyB []byte
		cur  []int64 // positions of the current run
		have bool
	)
	flush := func() {
		if have {
			out[key] = append(out[key], cur...)
		}
	}
	var pos []int64
	var defs []int16
	// Paths are read in batches of at most pathBatch, sized to the row
	// group: a streaming table's delete files hold a few rows each, and a
	// full batch per file was most of what deriving its snapshots
	// allocated.
	const pathBatch = 4096
	var vals []parquet.ByteArray
	for g := range pf.NumRowGroups() {
		rg := pf.RowGroup(g)
		n := rg.NumRows()
		if want := min(n, pathBatch); int64(len(vals)) < want {
			vals = make([]parquet.ByteArray, want)
		}
		if int64(cap(pos)) < n {
			pos = make([]int64, n)
			defs = make([]int16, n)
		}
		pos, defs = pos[:n], defs[:n]
		oc, err := rg.Column(posCol)
		if err != nil {
			return nil, err
		}
		var got int64
		for got < n {
			var d []int16
			if posMaxDef > 0 {
				d = defs[got:]
			}
			lv, nv, err := oc.(*file.Int64ColumnChunkReader).ReadBatch(n-got, pos[got:], d, nil)
			if err == nil && int64(nv) != lv {
				err = fmt.Errorf("null pos")
			}
			if err == nil && lv == 0 {
				err = fmt.Errorf("pos column ended after %d of %d rows", got, n)
			}
			if err != nil {
				oc.Close()
				return nil, err
			}
			got += lv
		}
		oc.Close()
		pc, err := rg.Column(pathCol)
		if err != nil {
			return nil, err
		}
		pr := pc.(*file.ByteArrayColumnChunkReader)
		for row := int64(0); row < n; {
			want := min(n-row, int64(len(vals)))
			var d []int16
			if pathMaxDef > 0 {
				d = defs[:want]
			}
			lv, nv, err := pr.ReadBatchInPage(want, vals[:want], d, nil)
			if err == nil && int64(nv) != lv {
				err = fmt.Errorf("null file_path")
			}
			if err == nil && lv == 0 {
				err = pr.Err()
				if err == nil {
					err = fmt.Errorf("file_path column ended after %d of %d rows", row, n)
				}
			}
			if err != nil {
				pc.Close()
				return nil, err
			}
			for i, v := range vals[:nv] {
				if !have || !bytes.Equal(v, keyB) {
					flush()
					key = string(v) // copies: v aliases a page
					keyB, cur, have = []byte(key), cur[:0], true
				}
				cur = append(cur, pos[row+int64(i)])
			}
			row += lv
		}
		pc.Close()
	}
	flush()
	return out, nil
}
