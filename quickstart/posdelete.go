package quickstart

import (
	"fmt"
	"maps"
	"slices"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	icefiles "github.com/lakegw/lakegw/lake/files"
)

// writePositionDeletes writes one file-scoped v2 position delete file per
// data file in targets (data file path -> positions to delete) and returns
// them ready for RowDelta.AddDeletes, with the paths written so a failed
// commit can remove them.
func writePositionDeletes(tbl *table.Table, fs icebergio.WriteFileIO, targets map[string][]int64) ([]iceberg.DataFile, []string, error) {
	locs, err := tbl.LocationProvider()
	if err != nil {
		return nil, nil, fmt.Errorf("location provider: %w", err)
	}
	var (
		deletes []iceberg.DataFile
		written []string
	)
	for _, dataPath := range slices.Sorted(maps.Keys(targets)) {
		path := locs.NewDataLocation(fmt.Sprintf("%s-deletes.parquet", uuid.NewString()))
		// Listed before the outcome is known: a failed write may leave
		// part of the file.
		written = append(written, path)
		df, _, err := icefiles.WritePositionDeletes(fs, tbl.Spec(), path, dataPath, targets[dataPath])
		if err != nil {
			return nil, written, err
		}
		deletes = append(deletes, df)
	}
	return deletes, written, nil
}
