package derive

import (
	"context"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// readDenseGroup returns the rows at positions (sorted, all in row group g,
// which starts at row first) of a flat file: taken from the cached rows of
// the group, decoded whole and cached first on a miss. The batch holds
// only the wanted rows, so a derived snapshot keeps (and the changes cache
// counts) those, not the group.
func readDenseGroup(ctx context.Context, scan *table.Scan, d *dataFileFooter, df iceberg.DataFile, g int, first, seq int64, positions []int64, cache rowGroups) (arrow.RecordBatch, error) {
	projected, err := scan.Projection()
	if err != nil {
		return nil, err
	}
	whole, ok := cache.getOrWait(ctx, df.FilePath(), g, projected)
	if !ok {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if whole, err = decodeAndCache(ctx, projected, d, df, g, seq, cache); err != nil {
			return nil, err
		}
	}
	defer whole.Release()
	idx := array.NewInt32Builder(compute.GetAllocator(ctx))
	defer idx.Release()
	idx.Reserve(len(positions))
	for _, p := range positions {
		r := p - first
		if r < 0 || r >= whole.NumRows() {
			return nil, fmt.Errorf("data file %s: position %d is not in row group %d", df.FilePath(), p, g)
		}
		idx.UnsafeAppend(int32(r))
	}
	indices := idx.NewArray()
	defer indices.Release()
	taken, err := compute.Take(ctx, *compute.DefaultTakeOptions(), compute.NewDatumWithoutOwning(whole), compute.NewDatumWithoutOwning(indices))
	if err != nil {
		return nil, fmt.Errorf("data file %s, row group %d: take %d rows: %w", df.FilePath(), g, len(positions), err)
	}
	rd, ok := taken.(*compute.RecordDatum)
	if !ok {
		taken.Release()
		return nil, fmt.Errorf("data file %s, row group %d: take gave a %s", df.FilePath(), g, taken.Kind())
	}
	return rd.Value, nil
}

// decodeAndCache decodes row group g whole and caches it, under a claim
// that is released on every way out (a waiting derivation must never wait
// for a decode that ended).
func decodeAndCache(ctx context.Context, projected *iceberg.Schema, d *dataFileFooter, df iceberg.DataFile, g int, seq int64, cache rowGroups) (arrow.RecordBatch, error) {
	done := cache.claim(df.FilePath(), g)
	defer done()
	whole, err := readWholeGroup(ctx, projected, d, df, g)
	if err != nil {
		return nil, err
	}
	cache.add(df.FilePath(), g, seq, projected, whole)
	return whole, nil
}

// readWholeGroup decodes every row of row group g of a flat file through
// fileRows, under the decode cap, as one batch; a decoder's panic (a
// damaged page, an allocation over the cap) is an error naming the file.
func readWholeGroup(ctx context.Context, projected *iceberg.Schema, d *dataFileFooter, df iceberg.DataFile, g int) (_ arrow.RecordBatch, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("data file %s, row group %d is damaged: decoding it panicked: %v", df.FilePath(), g, p)
		}
	}()
	n := d.pf.MetaData().RowGroup(g).NumRows()
	mem := cappedAllocator{inner: memory.DefaultAllocator, max: decodeCap(df.FileSizeBytes())}
	fr, err := newFileRows(ctx, d.pf, df.FilePath(), projected, mem, []int{g}, int(max(n, 1)))
	if err != nil {
		return nil, err
	}
	defer fr.close()
	var (
		parts []arrow.RecordBatch
		rows  int64
	)
	defer func() { releaseAll(parts) }()
	for {
		b, err := fr.next()
		if err != nil {
			return nil, fmt.Errorf("data file %s, row group %d: %w", df.FilePath(), g, err)
		}
		if b == nil {
			break
		}
		parts = append(parts, b)
		rows += b.NumRows()
	}
	if rows != n {
		return nil, fmt.Errorf("data file %s, row group %d: read %d rows, its footer says %d", df.FilePath(), g, rows, n)
	}
	if len(parts) == 1 {
		b := parts[0]
		parts = nil
		return b, nil
	}
	return concatBatches(parts, compute.GetAllocator(ctx))
}

// concatBatches joins batches of one schema into one.
func concatBatches(parts []arrow.RecordBatch, mem memory.Allocator) (arrow.RecordBatch, error) {
	if len(parts) == 0 {
		return nil, errors.New("no batches to join")
	}
	sc := parts[0].Schema()
	cols := make([]arrow.Array, sc.NumFields())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	var rows int64
	for _, p := range parts {
		rows += p.NumRows()
	}
	for i := range cols {
		chunks := make([]arrow.Array, len(parts))
		for j, p := range parts {
			chunks[j] = p.Column(i)
		}
		c, err := array.Concatenate(chunks, mem)
		if err != nil {
			return nil, fmt.Errorf("join column %s: %w", sc.Field(i).Name, err)
		}
		cols[i] = c
	}
	return array.NewRecordBatch(sc, cols, rows), nil
}
