package derive

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/changelog"
)

// lsmManifestPath returns the changelog manifest of a snapshot of an LSM
// table, or "" when Derive must derive as for any table (not an LSM table,
// or a snapshot written by another writer).
func lsmManifestPath(tbl *table.Table, s *table.Snapshot) string {
	if !changelog.IsLSMTable(tbl.Properties()) || s.Summary == nil {
		return ""
	}
	return s.Summary.Properties[changelog.SummaryLSMManifest]
}

// deriveLSM fills c from the snapshot's changelog files: partition =
// bucket, records in file order, -U/+U pairs folded into one update.
func deriveLSM(ctx context.Context, tbl *table.Table, manifestPath string, c *changelog.Changes) error {
	fs, err := tbl.FS(ctx)
	if err != nil {
		return fmt.Errorf("file IO: %w", err)
	}
	m, err := changelog.ReadLSMManifest(fs, manifestPath)
	if err != nil {
		return err
	}
	if int32(m.Buckets) != c.Partitions {
		return fmt.Errorf("table has %d buckets, its topic %d partitions (table property lakegw.partitions)", m.Buckets, c.Partitions)
	}
	files := slices.Clone(m.Files)
	slices.SortStableFunc(files, func(a, b changelog.LSMFile) int { return a.Bucket - b.Bucket })
	for _, f := range files {
		n := len(c.Records)
		if err := readLSMFile(ctx, fs, f, c); err != nil {
			return fmt.Errorf("changelog file %s: %w", f.Path, err)
		}
		if got := int64(len(c.Records) - n); got != f.Records {
			return fmt.Errorf("changelog file %s holds %d records, its manifest says %d", f.Path, got, f.Records)
		}
	}
	return nil
}

// readLSMFile appends the batches and records of one bucket's changelog file.
func readLSMFile(ctx context.Context, fs icebergio.IO, f changelog.LSMFile, c *changelog.Changes) error {
	src, err := fs.Open(f.Path)
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	defer src.Close()
	st, err := src.Stat()
	if err != nil {
		return fmt.Errorf("stat: %w", err)
	}
	// Read in this goroutine (a panic is Derive's error), under the cap
	// that keeps a damaged length from running the process out of memory
	// (see cappedAllocator, checkArrowSchema).
	mem := cappedAllocator{inner: memory.DefaultAllocator, max: decodeCap(st.Size())}
	pf, err := file.NewParquetReader(src, file.WithReadProps(parquet.NewReaderProperties(mem)))
	if err != nil {
		return fmt.Errorf("parquet footer: %w", err)
	}
	defer pf.Close()
	if err := checkArrowSchema(pf, mem); err != nil {
		return err
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: 64 << 10}, mem)
	if err != nil {
		return err
	}
	rr, err := fr.GetRecordReader(ctx, nil, nil)
	if err != nil {
		return err
	}
	defer rr.Release()
	pending := changelog.NoRow // a -U waiting for its +U
	for rr.Next() {
		rec := rr.RecordBatch()
		batch, ops, err := projectLSMBatch(rec, c)
		if err != nil {
			return err
		}
		bi := int32(len(c.Batches))
		c.Batches = append(c.Batches, batch)
		for r := 0; r < ops.Len(); r++ {
			ref := changelog.RowRef{Batch: bi, Row: int32(r)}
			op := ops.Value(r)
			if pending.Valid() != (op == changelog.LSMOpUpdateAfter) {
				return fmt.Errorf("row %d: %q where %s", r, op, map[bool]string{true: "+U must follow -U", false: "-U must be followed by +U"}[pending.Valid()])
			}
			switch op {
			case changelog.LSMOpInsert:
				c.Records = append(c.Records, changelog.Record{Op: changelog.OpInsert, Before: changelog.NoRow, After: ref, Partition: int32(f.Bucket)})
			case changelog.LSMOpDelete:
				c.Records = append(c.Records, changelog.Record{Op: changelog.OpDelete, Before: ref, After: changelog.NoRow, Partition: int32(f.Bucket)})
			case changelog.LSMOpUpdateBefore:
				pending = ref
			case changelog.LSMOpUpdateAfter:
				c.Records = append(c.Records, changelog.Record{Op: changelog.OpUpdate, Before: pending, After: ref, Partition: int32(f.Bucket)})
				pending = changelog.NoRow
			default:
				return fmt.Errorf("row %d: unknown op %q", r, op)
			}
		}
	}
	if err := rr.Err(); err != nil && err != io.EOF {
		return fmt.Errorf("read: %w", err)
	}
	if pending.Valid() {
		return fmt.Errorf("file ends with a -U without its +U")
	}
	return nil
}

// projectLSMBatch splits a changelog file batch into the op column and a
// batch of the snapshot schema's top-level columns, matched by field id.
// The returned batch is retained for c.
func projectLSMBatch(rec arrow.RecordBatch, c *changelog.Changes) (arrow.RecordBatch, *array.String, error) {
	sc := rec.Schema()
	byID := make(map[int]int, sc.NumFields())
	opCol := -1
	for i, fld := range sc.Fields() {
		id := -1
		if v, ok := fld.Metadata.GetValue("PARQUET:field_id"); ok {
			if n, err := strconv.Atoi(v); err == nil {
				id = n
			}
		}
		if id == changelog.LSMOpFieldID || fld.Name == changelog.LSMOpColumn {
			opCol = i
			continue
		}
		byID[id] = i
	}
	if opCol < 0 {
		return nil, nil, fmt.Errorf("no %s column", changelog.LSMOpColumn)
	}
	ops, ok := rec.Column(opCol).(*array.String)
	if !ok {
		return nil, nil, fmt.Errorf("%s column is %s, want string", changelog.LSMOpColumn, rec.Column(opCol).DataType())
	}
	if ops.NullN() > 0 {
		return nil, nil, fmt.Errorf("%s column has nulls", changelog.LSMOpColumn)
	}
	fields := c.Schema.Fields()
	cols := make([]arrow.Array, len(fields))
	afields := make([]arrow.Field, len(fields))
	for i, f := range fields {
		j, ok := byID[f.ID]
		if !ok {
			return nil, nil, fmt.Errorf("column %s (field id %d) of schema %d is missing", f.Name, f.ID, c.Schema.ID)
		}
		cols[i], afields[i] = rec.Column(j), sc.Field(j)
	}
	return array.NewRecordBatch(arrow.NewSchema(afields, nil), cols, rec.NumRows()), ops, nil
}
