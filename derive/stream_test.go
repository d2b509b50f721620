package derive

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/changelog"
)

// encodedRecords is each record of c as debezium-json writes it: key,
// value and op, the oracle a stream's chunks are held to.
func encodedRecords(t *testing.T, c *changelog.Changes) []string {
	t.Helper()
	f, err := changelog.FormatByName("debezium-json")
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(c.Records))
	for i := range c.Records {
		k, _ := f.AppendKey(nil, c, &c.Records[i])
		v, _ := f.AppendValue(nil, c, &c.Records[i])
		out[i] = fmt.Sprintf("%s %s %s", c.Records[i].Op.Header(), k, v)
	}
	return out
}

// streamRange reads records [from, from+n) from s and encodes them.
func streamRange(t *testing.T, s *Stream, from, n int64) []string {
	t.Helper()
	c, err := s.Read(context.Background(), from, n)
	if err != nil {
		t.Fatalf("read [%d, %d): %v", from, from+n, err)
	}
	defer c.Release()
	if int64(len(c.Records)) != n {
		t.Fatalf("read [%d, %d): %d records", from, from+n, len(c.Records))
	}
	return encodedRecords(t, c)
}

// streamOfFirst opens a stream of the table's first snapshot and returns
// it with the records Derive gives that snapshot, encoded.
func streamOfFirst(t *testing.T, tbl *table.Table) (*Stream, []string) {
	t.Helper()
	ctx := context.Background()
	hist, err := changelog.MainHistory(tbl.Metadata())
	if err != nil {
		t.Fatal(err)
	}
	whole, err := Derive(ctx, tbl, hist[0], Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := encodedRecords(t, whole)
	whole.Release()
	s, ok, err := OpenAppendStream(ctx, tbl, hist[0], Options{})
	if err != nil || !ok {
		t.Fatalf("open: %v %v", ok, err)
	}
	return s, want
}

// A stream's chunks, read in order or anywhere (into the middle of a row
// group, back, across files), are byte for byte the records Derive gives
// the snapshot: three files of 40, 40 and 20 rows in row groups of 7.
func TestAppendStreamAgreesWithDerive(t *testing.T) {
	cat := newTestCatalog(t)
	sc := iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "v", Type: iceberg.PrimitiveTypes.String})
	tbl := createTable(t, cat, "streamed", sc, catalog.WithProperties(iceberg.Properties{"write.parquet.row-group-limit": "7"}))
	var rows []string
	for i := range 100 {
		rows = append(rows, fmt.Sprintf(`{"id":%d,"v":"row %d"}`, i, i))
	}
	tbl = appendJSON(t, tbl, "["+strings.Join(rows, ",")+"]", 40)
	s, want := streamOfFirst(t, tbl)
	defer s.Close()
	// The seeks below land inside row groups only if there are several.
	groups := 0
	for _, e := range s.plan.delta.addedData {
		d, err := openDataFile(s.plan.fs, e.DataFile())
		if err != nil {
			t.Fatal(err)
		}
		groups += d.pf.NumRowGroups()
		d.Close()
	}
	if groups != 15 {
		t.Fatalf("the data files have %d row groups, want 15 (6, 6 and 3) of at most 7 rows", groups)
	}
	if s.Len() != 100 {
		t.Fatalf("Len %d, want 100", s.Len())
	}
	var got []string
	for from := int64(0); from < 100; from += 9 {
		got = append(got, streamRange(t, s, from, min(9, 100-from))...)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("chunks in order differ from Derive:\n%s\nwant\n%s", strings.Join(head(got, 5), "\n"), strings.Join(head(want, 5), "\n"))
	}
	// Anywhere: back to the start, into a row group of the second file,
	// across the second and third files, the last record, nothing.
	for _, r := range [][2]int64{{0, 3}, {45, 10}, {3, 1}, {75, 10}, {99, 1}, {50, 0}, {13, 87}} {
		if g := streamRange(t, s, r[0], r[1]); strings.Join(g, "\n") != strings.Join(want[r[0]:r[0]+r[1]], "\n") {
			t.Fatalf("records [%d, %d) differ from Derive's", r[0], r[0]+r[1])
		}
	}
	if _, err := s.Read(context.Background(), 95, 6); err == nil {
		t.Fatal("read past the snapshot's records: no error")
	}

	// A data file gone from under the stream is an error naming it.
	path := strings.TrimPrefix(tbl.Location(), "file://")
	var removed string
	entries, _ := os.ReadDir(path + "/data")
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".parquet") {
			removed = path + "/data/" + e.Name()
			break
		}
	}
	if removed == "" {
		t.Fatalf("no data file under %s/data", path)
	}
	fresh, _ := streamOfFirst(t, tbl)
	defer fresh.Close()
	saved, err := os.ReadFile(removed)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(removed); err != nil {
		t.Fatal(err)
	}
	failed := false
	for from := int64(0); from < 100; from += 20 {
		if _, err := fresh.Read(context.Background(), from, 20); err != nil {
			failed = true
			if !strings.Contains(err.Error(), removed[strings.LastIndex(removed, "/")+1:]) {
				t.Errorf("read with %s gone: %v, which does not name it", removed, err)
			}
			break
		}
	}
	if !failed {
		t.Errorf("every record read with %s gone", removed)
	}
	// Back in place, the same stream reads on: after an error it seeks
	// afresh rather than go on from where its reader stopped.
	if err := os.WriteFile(removed, saved, 0o600); err != nil {
		t.Fatal(err)
	}
	if g := streamRange(t, fresh, 0, 100); strings.Join(g, "\n") != strings.Join(want, "\n") {
		t.Fatal("after the file came back, the stream's records differ from Derive's")
	}
}

// The stream opens exactly where AppendCount counts (a pure append on one
// partition) and reads there what Derive gives, on every fixture snapshot.
func TestAppendStreamOnFixtures(t *testing.T) {
	ctx := context.Background()
	streamed := 0
	forEachFixtureSnapshot(t, func(f fixture, tbl *table.Table, snap changelog.SnapshotRef) {
		_, counted, cerr := AppendCount(ctx, tbl, snap, Options{})
		s, ok, err := OpenAppendStream(ctx, tbl, snap, Options{})
		if (err != nil) != (cerr != nil) || ok != counted {
			t.Fatalf("%s snapshot %d: stream (%v, %v), count (%v, %v)", f.name, snap.SnapshotID, ok, err, counted, cerr)
		}
		if !ok {
			return
		}
		whole, err := Derive(ctx, tbl, snap, Options{})
		if err != nil {
			t.Fatal(err)
		}
		want := encodedRecords(t, whole)
		whole.Release()
		got := streamRange(t, s, 0, s.Len())
		s.Close()
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("%s snapshot %d: the stream's records differ from Derive's", f.name, snap.SnapshotID)
		}
		streamed++
	})
	if streamed == 0 {
		t.Fatal("no fixture snapshot was streamed")
	}
	t.Logf("%d fixture appends streamed", streamed)
}

// A file with nested columns is not read by fileRows but through
// iceberg-go's scanner (once checked), with the records Derive gives, in
// order and from inside a row group.
func TestAppendStreamReadsNestedFilesThroughTheScanner(t *testing.T) {
	ctx := context.Background()
	cat := newTestCatalog(t)
	sc := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "tags", Type: &iceberg.ListType{ElementID: 3, Element: iceberg.PrimitiveTypes.String, ElementRequired: false}})
	tbl := createTable(t, cat, "nested", sc, catalog.WithProperties(iceberg.Properties{"write.parquet.row-group-limit": "7"}))
	var rows []string
	for i := range 30 {
		rows = append(rows, fmt.Sprintf(`{"id":%d,"tags":["a%d","b"]}`, i, i))
	}
	tbl = appendJSON(t, tbl, "["+strings.Join(rows, ",")+"]", 20)
	s, want := streamOfFirst(t, tbl)
	defer s.Close()
	if _, _, err := openFileRows(ctx, s.plan.fs, s.scan, s.plan.delta.addedData[0].DataFile(), 0, 8); !errors.Is(err, errNotFlat) {
		t.Fatalf("a file with a list column opened by fileRows: %v", err)
	}
	var got []string
	for from := int64(0); from < 30; from += 4 {
		got = append(got, streamRange(t, s, from, min(4, 30-from))...)
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("chunks differ from Derive:\n%s\nwant\n%s", strings.Join(head(got, 3), "\n"), strings.Join(head(want, 3), "\n"))
	}
	if g := streamRange(t, s, 10, 15); strings.Join(g, "\n") != strings.Join(want[10:25], "\n") {
		t.Fatal("records [10, 25) differ from Derive's")
	}
}

// A damaged data file read by a stream (flipped bytes across its footer
// and pages, decoded in the stream's goroutine, with no whole-file check
// before) gives the records undamaged or an error naming the file, never
// a panic.
func TestAppendStreamDamagedDataFileNeverPanics(t *testing.T) {
	ctx := context.Background()
	cat := newTestCatalog(t)
	tbl := createTable(t, cat, "flips", hostileSchema())
	tbl = appendJSON(t, tbl, hostileRows(0, 400), 0)
	hist, err := changelog.MainHistory(tbl.Metadata())
	if err != nil {
		t.Fatal(err)
	}
	read := func() ([]string, error) {
		s, ok, err := OpenAppendStream(ctx, tbl, hist[0], Options{})
		if err != nil || !ok {
			return nil, fmt.Errorf("open: %v %w", ok, err)
		}
		defer s.Close()
		var out []string
		for from := int64(0); from < s.Len(); from += 150 {
			c, err := s.Read(ctx, from, min(150, s.Len()-from))
			if err != nil {
				return nil, err
			}
			out = append(out, encodedRecords(t, c)...)
			c.Release()
		}
		return out, nil
	}
	want, err := read()
	if err != nil {
		t.Fatal(err)
	}
	path := firstDataFile(t, tbl, hist[0].SnapshotID)
	flipEveryWay(t, path, func(what string) error {
		got, err := read()
		if err == nil && strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("%s: records differ from the undamaged file's, with no error", what)
		}
		return err
	})
}

// A snapshot stream reads the live rows ReadSnapshot gives, in its order,
// on every snapshot of every fixture (merge-on-read position deletes,
// equality deletes, deletion vectors, rewrites): in chunks in order, and
// from the middle after reading the end; SnapshotCount counts them.
func TestSnapshotStreamAgreesWithReadSnapshot(t *testing.T) {
	ctx := context.Background()
	read := 0
	forEachFixtureSnapshot(t, func(f fixture, tbl *table.Table, snap changelog.SnapshotRef) {
		whole, werr := ReadSnapshot(ctx, tbl, snap, Options{})
		n, ok, cerr := SnapshotCount(ctx, tbl, snap, Options{})
		s, sok, serr := OpenSnapshotStream(ctx, tbl, snap, Options{})
		if werr != nil {
			if cerr == nil || serr == nil {
				t.Fatalf("%s snapshot %d: ReadSnapshot fails (%v), the count (%v) or the stream (%v) does not", f.name, snap.SnapshotID, werr, cerr, serr)
			}
			return
		}
		if cerr != nil || serr != nil || !ok || !sok {
			t.Fatalf("%s snapshot %d: count (%v, %v), stream (%v, %v)", f.name, snap.SnapshotID, ok, cerr, sok, serr)
		}
		want := encodedRecords(t, whole)
		whole.Release()
		if n != int64(len(want)) || s.Len() != n {
			t.Fatalf("%s snapshot %d: counted %d, stream of %d, ReadSnapshot gives %d", f.name, snap.SnapshotID, n, s.Len(), len(want))
		}
		const chunk = 1000
		var got []string
		for from := int64(0); from < n; from += chunk {
			got = append(got, streamRange(t, s, from, min(chunk, n-from))...)
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Fatalf("%s snapshot %d: the stream's live rows differ from ReadSnapshot's", f.name, snap.SnapshotID)
		}
		if n > 2 {
			mid := n / 2
			if g := streamRange(t, s, mid, n-mid); strings.Join(g, "\n") != strings.Join(want[mid:], "\n") {
				t.Fatalf("%s snapshot %d: rows from %d differ from ReadSnapshot's", f.name, snap.SnapshotID, mid)
			}
		}
		s.Close()
		read++
	})
	if read == 0 {
		t.Fatal("no fixture snapshot was read")
	}
	t.Logf("%d fixture snapshots streamed", read)
	// Several partitions: each row's is its key's.
	tbl := openFixture(t, fixtures[0])
	hist, _ := changelog.MainHistory(tbl.Metadata())
	if _, ok, err := OpenSnapshotStream(ctx, tbl, hist[0], Options{Partitions: 2}); ok || err != nil {
		t.Fatalf("two partitions: streamed (%v, %v)", ok, err)
	}
}

// forEachFixtureSnapshot calls each with every main-branch snapshot of
// every fixture table.
func forEachFixtureSnapshot(t *testing.T, each func(f fixture, tbl *table.Table, snap changelog.SnapshotRef)) {
	t.Helper()
	for _, f := range fixtures {
		tbl := openFixture(t, f)
		hist, err := changelog.MainHistory(tbl.Metadata())
		if err != nil {
			t.Fatal(err)
		}
		for _, snap := range hist {
			each(f, tbl, snap)
		}
	}
}

// A snapshot's live rows are counted from its position delete files
// (format 2) or deletion vectors (format 3) without reading its data
// files, and the stream reads as many as ReadSnapshot gives, at every
// snapshot of a merge-on-read history.
func TestSnapshotStreamCountsPositionDeletesAndDVs(t *testing.T) {
	ctx := context.Background()
	for _, version := range []string{"2", "3"} {
		tbl := mergeOnReadHistory(t, version)
		hist, err := changelog.MainHistory(tbl.Metadata())
		if err != nil {
			t.Fatal(err)
		}
		withDeletes := 0
		for _, snap := range hist {
			whole, err := ReadSnapshot(ctx, tbl, snap, Options{})
			if err != nil {
				t.Fatal(err)
			}
			want := encodedRecords(t, whole)
			whole.Release()
			n, ok, err := SnapshotCount(ctx, tbl, snap, Options{})
			if err != nil || !ok || n != int64(len(want)) {
				t.Fatalf("format %s snapshot %d: counted (%d, %v, %v), ReadSnapshot gives %d", version, snap.SequenceNumber, n, ok, err, len(want))
			}
			s, _, err := OpenSnapshotStream(ctx, tbl, snap, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if got := streamRange(t, s, 0, s.Len()); strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Fatalf("format %s snapshot %d: the stream's live rows differ from ReadSnapshot's", version, snap.SequenceNumber)
			}
			for _, task := range s.plan.tasks {
				if !plainTask(task) {
					withDeletes++
				}
			}
			s.Close()
		}
		if withDeletes == 0 {
			t.Fatalf("format %s: no snapshot had a file with deletes", version)
		}
	}
}
