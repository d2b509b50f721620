package derive

import (
	"fmt"
	"reflect"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	icefiles "github.com/lakegw/lakegw/lake/files"
)

// TestCachedPlansHoldSlimFiles replays merge-on-read histories (position
// delete files in v2, deletion vectors in v3) through a plan cache and
// checks that every file a cached plan holds is a slim copy that answers
// as the decoded manifest entry did for everything reading needs.
func TestCachedPlansHoldSlimFiles(t *testing.T) {
	for _, version := range []string{"2", "3"} {
		t.Run("v"+version, func(t *testing.T) {
			cat := newTestCatalog(t)
			tbl := createTable(t, cat, "slim", testSchema(), catalog.WithProperties(iceberg.Properties{
				"format-version": version, "write.delete.mode": "merge-on-read",
			}))
			tbl = appendJSON(t, tbl, jsonRows(0, 30), 10)
			tbl = deleteWhere(t, tbl, idIn(3, 4, 15))
			tbl = appendJSON(t, tbl, jsonRows(30, 35), 0)
			tbl = deleteWhere(t, tbl, idIn(31, 8, 21))
			cache := NewPlanCache(64, 1<<20)
			replayHistory(t, tbl, Options{PlanCache: cache})

			decoded := decodedFiles(t, tbl)
			var files, deletes int
			for _, k := range cache.plans.Keys() {
				plan, _ := cache.plans.Peek(k)
				for p, task := range plan {
					if task.File.FilePath() != p {
						t.Fatalf("plan key %s holds the task of %s", p, task.File.FilePath())
					}
					for _, f := range append(append(append([]iceberg.DataFile{task.File}, task.DeleteFiles...), task.EqualityDeleteFiles...), task.DeletionVectorFiles...) {
						if _, ok := f.(*slimFile); !ok {
							t.Fatalf("snapshot %d: %s is a %T, not a slim copy", k.snapshot, f.FilePath(), f)
						}
						want, ok := decoded[fileID(f)]
						if !ok {
							t.Fatalf("%s is in no manifest", f.FilePath())
						}
						if got, exp := readView(f), readView(want); got != exp {
							t.Fatalf("slim copy of %s reads as\n%s\nthe manifest entry as\n%s", f.FilePath(), got, exp)
						}
						if f.ContentType() == iceberg.EntryContentData {
							files++
						} else {
							deletes++
						}
					}
				}
			}
			if files == 0 || deletes == 0 {
				t.Fatalf("cached plans held %d data files and %d delete files: the history exercised nothing", files, deletes)
			}

			// A new run of the planner shares the slim copies of the
			// plan cached last instead of making its own.
			last := cache.last
			again, err := cache.planFiles(t.Context(), tbl, tbl.CurrentSnapshot())
			if err != nil {
				t.Fatal(err)
			}
			shared := 0
			for p, task := range again {
				if prev, ok := last[p]; ok {
					if prev.File != task.File {
						t.Fatalf("%s: the planner's plan holds a copy of its own", p)
					}
					shared++
				}
			}
			if shared == 0 {
				t.Fatal("the new plan shares no file with the last one")
			}
		})
	}
}

// readView is what derivation and iceberg-go's reader use of a file.
func readView(f iceberg.DataFile) string {
	id := icefiles.PosDeleteFilePathID
	view := fmt.Sprintf("content=%v path=%s format=%v partition=%v count=%d size=%d spec=%d key=%v splits=%v eq=%v sort=%v first=%v ref=%v off=%v len=%v target=%q",
		f.ContentType(), f.FilePath(), f.FileFormat(), f.Partition(), f.Count(), f.FileSizeBytes(), f.SpecID(),
		f.KeyMetadata(), f.SplitOffsets(), f.EqualityFieldIDs(), deref(f.SortOrderID()), deref(f.FirstRowID()),
		deref(f.ReferencedDataFile()), deref(f.ContentOffset()), deref(f.ContentSizeInBytes()), icefiles.PositionDeleteTarget(f))
	if f.ContentType() == iceberg.EntryContentPosDeletes {
		view += fmt.Sprintf(" values=%v nulls=%v nans=%v lower=%q upper=%q", f.ValueCounts()[id], f.NullValueCounts()[id],
			f.NaNValueCounts()[id], f.LowerBoundValues()[id], f.UpperBoundValues()[id])
	}
	return view
}

func deref(p any) any {
	v := reflect.ValueOf(p)
	if v.Kind() == reflect.Pointer && !v.IsNil() {
		return v.Elem().Interface()
	}
	return nil
}

func fileID(f iceberg.DataFile) string {
	return fmt.Sprintf("%s@%v", f.FilePath(), deref(f.ContentOffset()))
}

// decodedFiles is every file any snapshot of tbl lists, as its manifest
// entry decodes.
func decodedFiles(t *testing.T, tbl *table.Table) map[string]iceberg.DataFile {
	t.Helper()
	fs, err := tbl.FS(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]iceberg.DataFile{}
	for _, s := range tbl.Metadata().Snapshots() {
		mans, err := s.Manifests(fs)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range mans {
			entries, err := icefiles.ManifestEntries(fs, m, false)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				out[fileID(e.DataFile())] = e.DataFile()
			}
		}
	}
	return out
}
