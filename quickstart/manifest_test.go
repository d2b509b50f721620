package quickstart

import (
	"context"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	icefiles "github.com/lakegw/lakegw/lake/files"
)

// snapshotFilesAdded lists the files a snapshot added, by content, from the
// manifests that snapshot wrote. It also reports any file the snapshot
// removed, which a merge-on-read writer must never do.
func snapshotFilesAdded(t *testing.T, tbl *table.Table, snap table.Snapshot) (data, posDeletes []iceberg.DataFile, removed int) {
	t.Helper()
	fs, err := tbl.FS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	manifests, err := snap.Manifests(fs)
	if err != nil {
		t.Fatalf("manifests of %d: %v", snap.SnapshotID, err)
	}
	for _, m := range manifests {
		if m.SnapshotID() != snap.SnapshotID {
			continue
		}
		entries, err := icefiles.ManifestEntries(fs, m, false)
		if err != nil {
			t.Fatalf("entries of %s: %v", m.FilePath(), err)
		}
		for _, e := range entries {
			switch {
			case e.Status() == iceberg.EntryStatusDELETED:
				removed++
			case e.Status() != iceberg.EntryStatusADDED:
			case e.DataFile().ContentType() == iceberg.EntryContentData:
				data = append(data, e.DataFile())
			case e.DataFile().ContentType() == iceberg.EntryContentPosDeletes:
				posDeletes = append(posDeletes, e.DataFile())
			default:
				t.Errorf("snapshot %d added unexpected content %v", snap.SnapshotID, e.DataFile().ContentType())
			}
		}
	}
	return data, posDeletes, removed
}

func TestSnapshotsAreMergeOnRead(t *testing.T) {
	cat, _ := openTestCatalog(t)
	d := newTestDemo(t, cat, 42)
	ids := steps(t, d, 8)
	tbl, err := cat.LoadTable(context.Background(), DefaultTable())
	if err != nil {
		t.Fatal(err)
	}

	dataFiles := make(map[string]bool)
	mixed := 0
	for i, id := range ids {
		snap := tbl.SnapshotByID(id)
		if snap == nil {
			t.Fatalf("snapshot %d missing", id)
		}
		data, dels, removed := snapshotFilesAdded(t, tbl, *snap)
		if removed != 0 {
			t.Errorf("snapshot %d removed %d files: copy-on-write, not merge-on-read", id, removed)
		}
		if len(data) > 0 && len(dels) > 0 {
			mixed++
			if op := snap.Summary.Operation; op != table.OpOverwrite {
				t.Errorf("snapshot %d adds data and deletes with operation %q, want overwrite", id, op)
			}
		}
		if i == 0 && len(dels) != 0 {
			t.Errorf("first snapshot adds %d delete files, want a plain append", len(dels))
		}
		// A snapshot deletes rows committed before it, never its own.
		for _, f := range dels {
			checkPositionDeleteFile(t, f, dataFiles)
		}
		for _, f := range data {
			dataFiles[f.FilePath()] = true
		}
	}
	if mixed == 0 {
		t.Fatal("no snapshot adds data files and position deletes together")
	}
}

// checkPositionDeleteFile checks what readers rely on in a v2 position delete
// entry: the file_path bounds name one data file (v2 manifests have no
// referenced_data_file), which is a data file of an earlier snapshot.
func checkPositionDeleteFile(t *testing.T, f iceberg.DataFile, dataFiles map[string]bool) {
	t.Helper()
	lo, hi := f.LowerBoundValues()[icefiles.PosDeleteFilePathID], f.UpperBoundValues()[icefiles.PosDeleteFilePathID]
	if len(lo) == 0 || string(lo) != string(hi) {
		t.Errorf("delete file %s: file_path bounds %q..%q do not name one data file", f.FilePath(), lo, hi)
		return
	}
	if !dataFiles[string(lo)] {
		t.Errorf("delete file %s targets %s, which no earlier snapshot added", f.FilePath(), lo)
	}
	if f.Count() == 0 {
		t.Errorf("delete file %s is empty", f.FilePath())
	}
}
