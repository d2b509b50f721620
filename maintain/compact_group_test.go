package maintain

import (
	"fmt"
	"slices"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

func dataFile(t *testing.T, content iceberg.ManifestEntryContent, path string) iceberg.DataFile {
	t.Helper()
	b, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, content, path, iceberg.ParquetFile, nil, nil, nil, 10, 1000)
	if err != nil {
		t.Fatal(err)
	}
	return b.Build()
}

// A file planned as several byte ranges (larger than
// read.split.target-size) is rewritten with all of them or not at all:
// the rewrite replaces the whole file with the rows of the ranges it read,
// and a range left out would lose its rows.
func TestBoundedGroupTakesWholeFiles(t *testing.T) {
	del := dataFile(t, iceberg.EntryContentPosDeletes, "d1.parquet")
	var tasks []table.FileScanTask
	for i := range 4 {
		f := dataFile(t, iceberg.EntryContentData, fmt.Sprintf("f%d.parquet", i))
		task := table.FileScanTask{File: f}
		if i%2 == 1 {
			task.DeleteFiles = []iceberg.DataFile{del}
		}
		// Three ranges of every file, the planner's order.
		for r := range 3 {
			task.Start, task.Length = int64(r*100), 100
			tasks = append(tasks, task)
		}
	}
	for _, maxFiles := range []int{-1, 0, 1, 2, 3, 4, 5} {
		group := boundedGroup(tasks, maxFiles)
		ranges := map[string]int{}
		for _, g := range group {
			ranges[g.File.FilePath()]++
		}
		want := min(max(maxFiles, 1), 4)
		if len(ranges) != want {
			t.Errorf("at most %d files: the group has %d (%v)", maxFiles, len(ranges), ranges)
		}
		for p, n := range ranges {
			if n != 3 {
				t.Errorf("at most %d files: %s in the group with %d of its 3 ranges", maxFiles, p, n)
			}
		}
		// The files with deletes first.
		if want <= 2 {
			for p := range ranges {
				if !slices.Contains([]string{"f1.parquet", "f3.parquet"}, p) {
					t.Errorf("at most %d files: picked %s, which has no delete file, before one that has", maxFiles, p)
				}
			}
		}
	}
}
