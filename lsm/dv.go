package lsm

import (
	"context"
	"fmt"
	"slices"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/dv"
)

// Deletion vectors (format v3). On a v3 table a commit deletes the images
// it replaces with deletion vectors instead of position delete files: one
// Puffin file per bucket and commit, one deletion-vector-v1 blob per data
// file that lost rows. The spec allows one live DV per data file, so when
// a data file that already has a DV loses more rows, the new DV holds the
// union of the old positions and the new ones, and the same RowDelta
// removes the old DV (RowDelta.RemoveDeletes). Compaction removes the DVs
// of its inputs with the inputs.

// usesDeletionVectors reports whether commits to the table write DVs.
func usesDeletionVectors(tbl *table.Table) bool {
	return tbl.Metadata().Version() >= 3
}

func dvCacheKey(df iceberg.DataFile) string {
	var off int64
	if p := df.ContentOffset(); p != nil {
		off = *p
	}
	return fmt.Sprintf("dv:%s@%d", df.FilePath(), off)
}

// deletionVector reads a DV (cached: DVs are immutable like every file).
func (t *Table) deletionVector(fs icebergio.IO, df iceberg.DataFile) (*dv.RoaringPositionBitmap, error) {
	key := dvCacheKey(df)
	if v, ok := t.cache.get(key); ok {
		return v.(*dv.RoaringPositionBitmap), nil
	}
	bm, err := dv.ReadDV(fs, df)
	if err != nil {
		return nil, err
	}
	size := int64(64)
	if p := df.ContentSizeInBytes(); p != nil {
		size += *p
	}
	t.cache.add(key, bm, size)
	return bm, nil
}

// writeDeletionVectors writes the DVs of one bucket's commit into one
// Puffin file at path: per data file, its already deleted positions (its
// DV, or the position deletes of a table upgraded from v2) and the new
// ones. It returns the new DVs and the DVs they supersede, which the
// commit must remove.
func (t *Table) writeDeletionVectors(ctx context.Context, fs icebergio.WriteFileIO, tbl *table.Table, path string, files []*runFile, newPos map[*runFile][]int64) (added, superseded []iceberg.DataFile, size int64, err error) {
	meta := tbl.Metadata()
	w := dv.NewDVWriter(fs, func(id int32) *iceberg.PartitionSpec { return meta.PartitionSpecByID(int(id)) })
	for _, f := range files {
		old, err := t.deletedPositions(ctx, fs, f)
		if err != nil {
			return nil, nil, 0, err
		}
		positions := slices.Clone(newPos[f])
		for p := range old {
			positions = append(positions, p)
		}
		if err := w.Add(f.path, positions, f.df.SpecID(), f.df.Partition()); err != nil {
			return nil, nil, 0, fmt.Errorf("deletion vector for %s: %w", f.path, err)
		}
		if f.dv != nil {
			superseded = append(superseded, f.dv)
		}
	}
	added, err = w.Flush(ctx, path)
	if err != nil {
		return nil, nil, 0, fmt.Errorf("write %s: %w", path, err)
	}
	if len(added) > 0 {
		size = added[0].FileSizeBytes()
	}
	return added, superseded, size, nil
}
