package files

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
)

// A file-scoped position delete file written here reads back as written,
// and its manifest entry names its one target both ways readers look for
// it (referenced_data_file, equal file_path bounds).
func TestPositionDeletesRoundTrip(t *testing.T) {
	dir := t.TempDir()
	fs := icebergio.LocalFS{}
	path := filepath.Join(dir, "d.parquet")
	const dataPath = "file:///warehouse/t/data/a.parquet"
	df, size, err := WritePositionDeletes(fs, *iceberg.UnpartitionedSpec, path, dataPath, []int64{9, 2, 5})
	if err != nil {
		t.Fatal(err)
	}
	if df.ContentType() != iceberg.EntryContentPosDeletes || df.Count() != 3 || df.FileSizeBytes() != size || size == 0 {
		t.Fatalf("entry: content %v, count %d, size %d (written %d)", df.ContentType(), df.Count(), df.FileSizeBytes(), size)
	}
	if got := PositionDeleteTarget(df); got != dataPath {
		t.Fatalf("target %q, want %q", got, dataPath)
	}
	got, err := ReadPositionDeletes(context.Background(), fs, path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !slices.Equal(got[dataPath], []int64{2, 5, 9}) {
		t.Fatalf("read %v, want %s: [2 5 9]", got, dataPath)
	}
}

// Without referenced_data_file, bounds that differ say the file is
// partition-scoped: no single target.
func TestPositionDeleteTargetOfAPartitionScopedFile(t *testing.T) {
	b, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentPosDeletes, "d.parquet", iceberg.ParquetFile, nil, nil, nil, 2, 10)
	if err != nil {
		t.Fatal(err)
	}
	b.LowerBoundValues(map[int][]byte{PosDeleteFilePathID: []byte("a")}).UpperBoundValues(map[int][]byte{PosDeleteFilePathID: []byte("b")})
	if got := PositionDeleteTarget(b.Build()); got != "" {
		t.Fatalf("target %q of a file with bounds a..b, want none", got)
	}
}

// No positions is a caller's error, not an empty file.
func TestWritePositionDeletesRefusesNoPositions(t *testing.T) {
	if _, _, err := WritePositionDeletes(icebergio.LocalFS{}, *iceberg.UnpartitionedSpec, filepath.Join(t.TempDir(), "d.parquet"), "a", nil); err == nil {
		t.Fatal("no positions accepted")
	}
}
