package lsm

import (
	"context"
	"errors"
	iofs "io/fs"
	"os"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/changelog"
	"github.com/lakegw/lakegw/derive"
)

// Bloom filters on the key rule out absent keys inside a file's key range,
// so point lookups skip the file.
func TestLsmBloomFilterPrunesAbsentKeys(t *testing.T) {
	ctx := context.Background()
	cat := testCatalog(t, t.TempDir())
	tb := createTestTable(t, cat, "bloom", CreateOptions{Buckets: 1}, Options{})
	w, _ := tb.NewWriter(ctx)
	for i := int64(0); i < 1000; i += 2 {
		if err := w.Upsert(map[string]any{"id": i, "name": "x"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := w.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	tbl, sp, err := tb.load(ctx)
	if err != nil {
		t.Fatal(err)
	}
	st, err := loadState(ctx, tbl, sp, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := st.buckets[0][0]
	if !f.mayContain(sp, Row{int64(501), nil, nil, nil}) || f.mayContain(sp, Row{int64(5000), nil, nil, nil}) {
		t.Fatalf("key bounds %v..%v", f.lower, f.upper)
	}
	fs, _ := tbl.FS(ctx)
	var rows []Row
	var cand []int
	for i := int64(0); i < 100; i++ {
		rows = append(rows, Row{2*i + 1, nil, nil, nil}) // all absent
		cand = append(cand, int(i))
	}
	rows = append(rows, Row{int64(500), nil, nil, nil}) // present
	cand = append(cand, 100)
	kept, err := bloomCandidates(fs, sp, f.path, rows, cand)
	if err != nil {
		t.Fatal(err)
	}
	if len(kept) > 10 || len(kept) == 0 || kept[len(kept)-1] != 100 {
		t.Fatalf("bloom filters kept %d of 101 candidates: %v", len(kept), kept)
	}
}

// A damaged or missing changelog file is an error naming it, never a
// panic or silently wrong events.
func TestLsmDamagedChangelogIsAnError(t *testing.T) {
	ctx := context.Background()
	cat := testCatalog(t, t.TempDir())
	tb := createTestTable(t, cat, "damaged", CreateOptions{Buckets: 1}, Options{})
	w, _ := tb.NewWriter(ctx)
	if err := w.Upsert(map[string]any{"id": int64(1), "name": "x"}); err != nil {
		t.Fatal(err)
	}
	res, err := w.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tbl, _ := cat.LoadTable(ctx, table.Identifier{"ns", "damaged"})
	s := tbl.SnapshotByID(res.SnapshotID)
	fs, _ := tbl.FS(ctx)
	f, err := fs.Open(s.Summary.Properties[changelog.SummaryLSMManifest])
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	n, _ := f.Read(buf)
	f.Close()
	m, err := changelog.DecodeLSMManifest(buf[:n])
	if err != nil {
		t.Fatal(err)
	}
	local := strings.TrimPrefix(m.Files[0].Path, "file://")
	ref := changelog.SnapshotRef{SnapshotID: s.SnapshotID, SequenceNumber: s.SequenceNumber}
	if err := os.WriteFile(local, []byte("not parquet at all"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := derive.Derive(ctx, tbl, ref, derive.Options{Partitions: 1}); err == nil || !strings.Contains(err.Error(), m.Files[0].Path) {
		t.Fatalf("damaged file: %v", err)
	}
	if err := os.Remove(local); err != nil {
		t.Fatal(err)
	}
	if _, err := derive.Derive(ctx, tbl, ref, derive.Options{Partitions: 1}); err == nil || !strings.Contains(err.Error(), m.Files[0].Path) || !errors.Is(err, iofs.ErrNotExist) {
		t.Fatalf("missing file: %v (want it named and wrapping fs.ErrNotExist)", err)
	}
}
