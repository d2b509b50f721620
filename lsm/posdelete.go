package lsm

import (
	"context"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
)

// Field ids of the position delete schema, fixed by the Iceberg spec.
const (
	posDeleteFilePathID = 2147483546
	posDeletePosID      = 2147483545
)

// writePositionDeletes writes one file-scoped v2 position delete file for
// the positions of one data file, as quickstart/ does: iceberg-go v0.7.0
// writes position deletes only by filter. File-scoped files (equal
// file_path bounds, referenced_data_file set) let readers apply them to
// that file only.
func writePositionDeletes(fs icebergio.WriteFileIO, spec iceberg.PartitionSpec, path, dataPath string, positions []int64) (iceberg.DataFile, int64, error) {
	positions = slices.Clone(positions)
	slices.Sort(positions)
	cols := []pqCol{
		{name: "file_path", id: posDeleteFilePathID, kind: kString, required: true},
		{name: "pos", id: posDeletePosID, kind: kInt64, required: true},
	}
	body, err := encodeRows(cols, len(positions), len(positions)+1, func(r, c int) any {
		if c == 0 {
			return dataPath
		}
		return positions[r]
	})
	if err != nil {
		return nil, 0, fmt.Errorf("encode position deletes for %s: %w", dataPath, err)
	}
	if err := fs.WriteFile(path, body); err != nil {
		return nil, 0, fmt.Errorf("write %s: %w", path, err)
	}
	df, err := positionDeleteDataFile(spec, path, int64(len(body)), dataPath, positions)
	return df, int64(len(body)), err
}

// positionDeleteDataFile describes a delete file with the metrics Iceberg
// Java records for position deletes.
func positionDeleteDataFile(spec iceberg.PartitionSpec, path string, size int64, dataPath string, positions []int64) (iceberg.DataFile, error) {
	n := int64(len(positions))
	b, err := iceberg.NewDataFileBuilder(spec, iceberg.EntryContentPosDeletes, path, iceberg.ParquetFile, nil, nil, nil, n, size)
	if err != nil {
		return nil, fmt.Errorf("describe %s: %w", path, err)
	}
	pathBound, err := iceberg.NewLiteral(dataPath).MarshalBinary()
	if err != nil {
		return nil, err
	}
	lo, err := iceberg.NewLiteral(positions[0]).MarshalBinary()
	if err != nil {
		return nil, err
	}
	hi, err := iceberg.NewLiteral(positions[len(positions)-1]).MarshalBinary()
	if err != nil {
		return nil, err
	}
	b.ValueCounts(map[int]int64{posDeleteFilePathID: n, posDeletePosID: n}).
		NullValueCounts(map[int]int64{posDeleteFilePathID: 0, posDeletePosID: 0}).
		LowerBoundValues(map[int][]byte{posDeleteFilePathID: pathBound, posDeletePosID: lo}).
		UpperBoundValues(map[int][]byte{posDeleteFilePathID: pathBound, posDeletePosID: hi}).
		ReferencedDataFile(dataPath)
	return b.Build(), nil
}

// positionDeleteTarget is the one data file a file-scoped position delete
// file deletes from: its referenced_data_file (a v3 manifest field), else
// its equal file_path bounds (as v2 manifests record it); "" when it is not
// file-scoped.
func positionDeleteTarget(df iceberg.DataFile) string {
	if ref := df.ReferencedDataFile(); ref != nil && *ref != "" {
		return *ref
	}
	lo, hi := df.LowerBoundValues()[posDeleteFilePathID], df.UpperBoundValues()[posDeleteFilePathID]
	if len(lo) == 0 || string(lo) != string(hi) {
		return ""
	}
	return string(lo)
}

// readPositionDeletes returns the positions a delete file deletes, by data
// file path.
func readPositionDeletes(ctx context.Context, fs icebergio.IO, path string) (map[string][]int64, error) {
	pf, err := openParquet(fs, path)
	if err != nil {
		return nil, err
	}
	defer pf.Close()
	out := map[string][]int64{}
	err = pf.eachRecord(ctx, func(rec arrow.RecordBatch) error {
		if rec.NumCols() < 2 {
			return fmt.Errorf("%s: %d columns, want file_path and pos", path, rec.NumCols())
		}
		paths, ok1 := rec.Column(0).(*array.String)
		poss, ok2 := rec.Column(1).(*array.Int64)
		if !ok1 || !ok2 {
			return fmt.Errorf("%s: columns are %s and %s, want string and long", path, rec.Column(0).DataType(), rec.Column(1).DataType())
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			p := paths.Value(i)
			out[p] = append(out[p], poss.Value(i))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
