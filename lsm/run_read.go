package lsm

import (
	"context"
	"fmt"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	icebergio "github.com/apache/iceberg-go/io"
)

// runData is a decoded sorted run file: its rows in file order (position
// = index), their sequence numbers and a key index.
type runData struct {
	rows  []Row
	seqs  []int64
	keys  []string
	index map[string]int32 // key -> position
	bytes int64            // estimated memory, for the cache
}

// readRun decodes a sorted run file. Columns are matched by field id, so
// the file's column order does not matter.
func readRun(ctx context.Context, fs icebergio.IO, sp *spec, path string) (*runData, error) {
	pf, err := openParquet(fs, path)
	if err != nil {
		return nil, err
	}
	defer pf.Close()
	n := pf.NumRows()
	d := &runData{rows: make([]Row, 0, n), seqs: make([]int64, 0, n), keys: make([]string, 0, n), index: make(map[string]int32, n)}
	err = pf.eachRecord(ctx, func(rec arrow.RecordBatch) error {
		cols := make([]int, len(sp.names))
		seqCol := -1
		byID := map[int]int{}
		for i, f := range rec.Schema().Fields() {
			if v, ok := f.Metadata.GetValue("PARQUET:field_id"); ok {
				if id, err := strconv.Atoi(v); err == nil {
					byID[id] = i
				}
			}
		}
		for i := range sp.names {
			c, ok := byID[sp.schema.Field(i).ID]
			if !ok {
				return fmt.Errorf("%s has no column %s", path, sp.names[i])
			}
			cols[i] = c
		}
		if c, ok := byID[seqFieldID]; ok {
			seqCol = c
		}
		for r := 0; r < int(rec.NumRows()); r++ {
			row := make(Row, len(cols))
			for i, c := range cols {
				v, err := valueAt(rec.Column(c), r)
				if err != nil {
					return fmt.Errorf("%s column %s: %w", path, sp.names[i], err)
				}
				row[i] = v
			}
			var seq int64
			if seqCol >= 0 {
				v, err := valueAt(rec.Column(seqCol), r)
				if err != nil {
					return fmt.Errorf("%s column %s: %w", path, seqColumn, err)
				}
				seq, _ = v.(int64)
			}
			key, err := sp.keyOf(row)
			if err != nil {
				return fmt.Errorf("%s row %d: %w", path, len(d.rows), err)
			}
			d.index[key] = int32(len(d.rows))
			d.rows = append(d.rows, row)
			d.seqs = append(d.seqs, seq)
			d.keys = append(d.keys, key)
			d.bytes += int64(len(key))*2 + 64 + int64(len(row))*24
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return d, nil
}
