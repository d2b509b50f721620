package derive

import (
	"context"
	"encoding/base64"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/dv"
)

// iceberg-go's scanner decodes data and delete files in goroutines it
// starts, where a panic of arrow-go on a damaged file (a changed byte in a
// footer: "invalid logical type", "makeslice: cap out of range") cannot be
// recovered by anyone and ends the process, every topic with it. So before
// a file is handed to the scanner it is decoded here, in the goroutine of
// the derivation and under recover, exactly as far as the scanner will
// decode it: the footer, every row group of every column, a deletion
// vector's blob. A file that fails is an error naming it; one that passes
// is remembered (Iceberg files are immutable: a location, size and row
// count decode the same way every time), so each file is checked once per
// process however often it is read.

// checkTaskFiles checks every file the tasks make the scanner decode.
func checkTaskFiles(ctx context.Context, fs icebergio.IO, tasks []table.FileScanTask) error {
	for _, t := range tasks {
		if err := checkFile(ctx, fs, t.File); err != nil {
			return err
		}
		for _, list := range [][]iceberg.DataFile{t.DeleteFiles, t.EqualityDeleteFiles, t.DeletionVectorFiles} {
			for _, f := range list {
				if err := checkFile(ctx, fs, f); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// checkFile checks one file unless it passed before.
func checkFile(ctx context.Context, fs icebergio.IO, f iceberg.DataFile) error {
	key := checkedKeyOf(fs, f)
	if filesChecked.has(key) {
		return nil
	}
	if err := decodeContained(ctx, fs, f); err != nil {
		return err
	}
	filesChecked.add(key)
	return nil
}

// decodeContained decodes f, turning a panic of the decoder into an error
// that names the file.
func decodeContained(ctx context.Context, fs icebergio.IO, f iceberg.DataFile) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("%s %s is damaged: decoding it panicked: %v", fileKind(f), f.FilePath(), p)
		}
	}()
	switch {
	case f.FileFormat() == iceberg.PuffinFile:
		if _, err := dv.ReadDV(fs, f); err != nil {
			return fmt.Errorf("deletion vector %s: %w", f.FilePath(), err)
		}
		return nil
	case f.FileFormat() != iceberg.ParquetFile:
		// Avro and ORC data files are not read by iceberg-go's scanner
		// (it returns an error, in the calling goroutine's iterator).
		return nil
	}
	if err := decodeParquet(ctx, fs, f); err != nil {
		return fmt.Errorf("%s %s: %w", fileKind(f), f.FilePath(), err)
	}
	return nil
}

// decodeParquet reads every row of a Parquet file into Arrow and drops it,
// checking the row count against the file's manifest entry: a damaged
// footer can also claim fewer rows, which no decoder notices.
func decodeParquet(ctx context.Context, fs icebergio.IO, f iceberg.DataFile) error {
	src, err := fs.Open(f.FilePath())
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	defer src.Close()
	mem := cappedAllocator{inner: memory.DefaultAllocator, max: decodeCap(f.FileSizeBytes())}
	props := readerPropertiesWith(cappedAllocator{inner: pageBuffers, max: mem.max})
	pf, err := file.NewParquetReader(src, file.WithReadProps(props))
	if err != nil {
		return fmt.Errorf("footer: %w", err)
	}
	defer pf.Close()
	if err := checkArrowSchema(pf, mem); err != nil {
		return err
	}
	var groups int64
	for g := range pf.NumRowGroups() {
		groups += pf.MetaData().RowGroup(g).NumRows()
	}
	if pf.NumRows() != f.Count() || groups != f.Count() {
		return fmt.Errorf("footer says %d rows (row groups %d), the manifest %d", pf.NumRows(), groups, f.Count())
	}
	fr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: checkBatchRows}, mem)
	if err != nil {
		return fmt.Errorf("schema: %w", err)
	}
	rr, err := fr.GetRecordReader(ctx, nil, nil)
	if err != nil {
		return fmt.Errorf("row groups: %w", err)
	}
	defer rr.Release()
	var rows int64
	for rr.Next() {
		rows += rr.RecordBatch().NumRows()
	}
	if err := rr.Err(); err != nil {
		return fmt.Errorf("decode: %w", err)
	}
	if rows != f.Count() {
		return fmt.Errorf("decoded %d rows, the manifest says %d", rows, f.Count())
	}
	return nil
}

// checkBatchRows is the batch size of a check: one batch's columns at a
// time are held, whatever the file's size.
const checkBatchRows = 8 << 10

func fileKind(f iceberg.DataFile) string {
	switch f.ContentType() {
	case iceberg.EntryContentPosDeletes:
		if f.FileFormat() == iceberg.PuffinFile {
			return "deletion vector"
		}
		return "position delete file"
	case iceberg.EntryContentEqDeletes:
		return "equality delete file"
	}
	return "data file"
}

// recoverRead turns a panic in a derivation (of our code or of a decoder
// running in our goroutine) into an error naming what was read, so that a
// damaged table fails its topic and nothing else.
func recoverRead(err *error, what func() string) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("%s: panic: %v", what(), p)
	}
}

// checkArrowSchema decodes the Arrow schema a writer may embed in the
// footer (ARROW:schema) under the cap: pqarrow decodes it with Go's
// allocator, trusting the message length it holds.
func checkArrowSchema(pf *file.Reader, mem memory.Allocator) error {
	v := pf.MetaData().KeyValueMetadata().FindValue("ARROW:schema")
	if v == nil {
		return nil
	}
	// Decoded as pqarrow does.
	var (
		decoded []byte
		err     error
	)
	if len(*v)%4 == 0 {
		decoded, err = base64.StdEncoding.DecodeString(*v)
	}
	if len(decoded) == 0 || err != nil {
		decoded, err = base64.RawStdEncoding.DecodeString(*v)
	}
	if err != nil {
		return nil // pqarrow ignores what it cannot decode as well
	}
	if err := checkSchemaMessage(decoded); err != nil {
		return err
	}
	if _, err := flight.DeserializeSchema(decoded, mem); err != nil {
		return fmt.Errorf("embedded Arrow schema: %w", err)
	}
	return nil
}
