package changelog

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/dv"
)

// positionIndex reads the positions that position delete files and deletion
// vectors delete, once per file within one derivation.
type positionIndex struct {
	fs icebergio.IO
	// byDeleteFile maps a position delete file to the positions it deletes
	// per data file path.
	byDeleteFile map[string]map[string][]int64
}

func newPositionIndex(fs icebergio.IO) *positionIndex {
	return &positionIndex{fs: fs, byDeleteFile: map[string]map[string][]int64{}}
}

// deleted returns the sorted, distinct positions of data file path that the
// task's deletion vector, or else its position delete files, delete. (A
// deletion vector supersedes position delete files, as in the planner.)
func (x *positionIndex) deleted(ctx context.Context, t table.FileScanTask) ([]int64, error) {
	path := t.File.FilePath()
	var out []int64
	if len(t.DeletionVectorFiles) > 0 {
		for _, f := range t.DeletionVectorFiles {
			bm, err := dv.ReadDV(x.fs, f)
			if err != nil {
				return nil, fmt.Errorf("read deletion vector %s: %w", f.FilePath(), err)
			}
			for p := range bm.Positions() {
				out = append(out, int64(p))
			}
		}
	} else {
		for _, f := range t.DeleteFiles {
			byPath, err := x.load(ctx, f)
			if err != nil {
				return nil, err
			}
			out = append(out, byPath[path]...)
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// load reads a position delete file's (file_path, pos) rows.
func (x *positionIndex) load(ctx context.Context, f iceberg.DataFile) (map[string][]int64, error) {
	if m, ok := x.byDeleteFile[f.FilePath()]; ok {
		return m, nil
	}
	if f.FileFormat() != iceberg.ParquetFile {
		return nil, fmt.Errorf("position delete file %s: format %s is not supported", f.FilePath(), f.FileFormat())
	}
	m, err := readPositionDeletes(ctx, x.fs, f.FilePath())
	if err != nil {
		return nil, fmt.Errorf("read position delete file %s: %w", f.FilePath(), err)
	}
	x.byDeleteFile[f.FilePath()] = m
	return m, nil
}

// Field ids of the position delete schema.
const (
	posDeleteFilePathID = 2147483546
	posDeletePosID      = 2147483545
)

func readPositionDeletes(ctx context.Context, fs icebergio.IO, path string) (_ map[string][]int64, err error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	pf, err := file.NewParquetReader(f)
	if err != nil {
		return nil, err
	}
	defer pf.Close()
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 64 * 1024}, memory.DefaultAllocator)
	if err != nil {
		return nil, err
	}
	// Columns by field id (Spark may add a "row" column; names are
	// fixed by the spec but ids are what identify them).
	sc := pf.MetaData().Schema
	pathCol, posCol := -1, -1
	for i := range sc.NumColumns() {
		switch sc.Column(i).SchemaNode().FieldID() {
		case posDeleteFilePathID:
			pathCol = i
		case posDeletePosID:
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
	rr, err := fr.GetRecordReader(ctx, []int{pathCol, posCol}, nil)
	if err != nil {
		return nil, err
	}
	defer rr.Release()
	out := map[string][]int64{}
	for rr.Next() {
		rec := rr.RecordBatch()
		paths, ok1 := rec.Column(0).(*array.String)
		poss, ok2 := rec.Column(1).(*array.Int64)
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("file_path/pos columns have types %s/%s", rec.Column(0).DataType(), rec.Column(1).DataType())
		}
		for i := range paths.Len() {
			if paths.IsNull(i) || poss.IsNull(i) {
				return nil, fmt.Errorf("null file_path or pos")
			}
			p := paths.Value(i)
			list, seen := out[p]
			if !seen {
				// Value aliases the arrow buffer; the map outlives it.
				p = strings.Clone(p)
			}
			out[p] = append(list, poss.Value(i))
		}
	}
	if err := rr.Err(); err != nil {
		return nil, err
	}
	return out, nil
}
