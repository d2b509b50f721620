package derive

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/changelog"
	"github.com/lakegw/lakegw/lake"
	icefiles "github.com/lakegw/lakegw/lake/files"
)

// damages are the ways a damage test changes the bytes at an offset: the
// "4 bytes changed" of issue 12, row 1, inverted, and one byte moved by
// one (which turns a Thrift field id or enum into a neighbouring value,
// the change that made arrow-go meet a logical type it does not know).
var damages = []struct {
	name string
	do   func(b []byte)
}{
	{"invert 4 bytes", func(b []byte) {
		for i := range min(4, len(b)) {
			b[i] ^= 0xff
		}
	}},
	{"increment a byte", func(b []byte) { b[0]++ }},
}

// damaged returns a copy of data with one damage applied at off.
func damaged(data []byte, off int, do func([]byte)) []byte {
	out := append([]byte(nil), data...)
	do(out[off:])
	return out
}

// hostileSchema has a column of each logical type family a Parquet footer
// describes (string, decimal, timestamp with unit, date, time).
func hostileSchema() *iceberg.Schema {
	return iceberg.NewSchemaWithIdentifiers(0, []int{1},
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "name", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "amount", Type: iceberg.DecimalTypeOf(10, 2)},
		iceberg.NestedField{ID: 4, Name: "at", Type: iceberg.PrimitiveTypes.TimestampTz},
		iceberg.NestedField{ID: 5, Name: "day", Type: iceberg.PrimitiveTypes.Date},
		iceberg.NestedField{ID: 6, Name: "tod", Type: iceberg.PrimitiveTypes.Time},
	)
}

func hostileRows(from, to int) string {
	var b strings.Builder
	b.WriteByte('[')
	for i := from; i < to; i++ {
		if i > from {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"id":%d,"name":"n%d","amount":"%d.%02d","at":"2024-05-%02dT10:00:%02dZ","day":"2024-06-%02d","tod":"10:%02d:00"}`,
			i, i%7, i, i%100, 1+i%28, i%60, 1+i%28, i%60)
	}
	b.WriteByte(']')
	return b.String()
}

// damageOffsets are the offsets a damage test flips at: every byte of the
// footer (the file metadata and schema: a changed logical type there made
// arrow-go panic) and a spread over the pages before it.
func damageOffsets(data []byte) []int {
	size := len(data)
	footer := size - 8
	if size >= 8 {
		footer -= int(binary.LittleEndian.Uint32(data[size-8:]))
	}
	footer = max(footer, 0)
	var offs []int
	step := max(footer/100, 1)
	for o := 0; o < footer; o += step {
		offs = append(offs, o)
	}
	footerStep := 1
	if testing.Short() {
		footerStep = 5 // -short: a fifth of the footer bytes
	}
	for o := footer; o < size; o += footerStep {
		offs = append(offs, o)
	}
	return offs
}

// firstDataFile returns the path of the first data file the snapshot added.
func firstDataFile(t testing.TB, tbl *table.Table, snapshotID int64) string {
	t.Helper()
	fs, err := tbl.FS(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ms, err := tbl.Metadata().SnapshotByID(snapshotID).Manifests(fs)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := icefiles.ManifestEntries(fs, ms[0], true)
	if err != nil {
		t.Fatal(err)
	}
	sortEntries(entries)
	return localPath(entries[0].DataFile().FilePath())
}

// derivedRows derives a snapshot onto state (a copy) and returns the rows
// after it, or the derivation's error.
func derivedRows(t *testing.T, tbl *table.Table, ref changelog.SnapshotRef, state rowMultiset) (rowMultiset, error) {
	t.Helper()
	return derivedRowsWith(t, tbl, ref, state, Options{})
}

// derivedRowsWith is derivedRows with options, under a deadline: a
// derivation that hangs fails.
func derivedRowsWith(t *testing.T, tbl *table.Table, ref changelog.SnapshotRef, state rowMultiset, opts Options) (rowMultiset, error) {
	t.Helper()
	filesChecked.forget() // the test changed a file in place
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	c, err := Derive(ctx, tbl, ref, opts)
	if err != nil {
		return nil, err
	}
	defer c.Release()
	out := rowMultiset{}
	for k, n := range state {
		out[k] = n
	}
	applyChanges(t, out, c)
	return out, nil
}

// TestDeriveDamagedDataFileNeverPanics reproduces issue 12, row 1: a data
// file with 4 bytes changed made arrow-go panic in a goroutine iceberg-go
// starts, and the process exited. Now every flip, at every footer byte and
// across the pages, of the file an append adds (read whole) and of the
// file a merge-on-read delete touches (read with its position deletes)
// gives the right rows or an error naming the file, and never a panic.
func TestDeriveDamagedDataFileNeverPanics(t *testing.T) {
	cat := newTestCatalog(t)
	tbl := createTable(t, cat, "flips", hostileSchema())
	tbl = appendJSON(t, tbl, hostileRows(0, 400), 0)
	hist, err := changelog.MainHistory(tbl.Metadata())
	if err != nil {
		t.Fatal(err)
	}
	want, err := derivedRows(t, tbl, hist[0], rowMultiset{})
	if err != nil {
		t.Fatal(err)
	}
	compareMultisets(t, "undamaged", scanRows(t, tbl, hist[0].SnapshotID), want)
	path := firstDataFile(t, tbl, hist[0].SnapshotID)
	flipEveryWay(t, path, func(what string) error {
		got, err := derivedRows(t, tbl, hist[0], rowMultiset{})
		if err == nil {
			compareMultisets(t, what, want, got)
		}
		return err
	})
}

// TestDeriveDamagedFileWithRowGroupCache flips the bytes of a file that
// position deletes fall on densely, so that its row groups are decoded
// whole for the row group cache: every flip gives the right rows or an
// error naming the file, never a panic, and a decode that failed leaves no
// claim behind (a second derivation with the same cache would wait for it
// until its deadline).
func TestDeriveDamagedFileWithRowGroupCache(t *testing.T) {
	cat := newTestCatalog(t)
	tbl := createTable(t, cat, "flips_cached", hostileSchema(), catalog.WithProperties(iceberg.Properties{"format-version": "2"}))
	tbl = appendJSON(t, tbl, hostileRows(0, 400), 0)
	hist, err := changelog.MainHistory(tbl.Metadata())
	if err != nil {
		t.Fatal(err)
	}
	path := firstDataFile(t, tbl, hist[0].SnapshotID)
	var positions []int64
	for p := int64(0); p < 400; p += 3 {
		positions = append(positions, p)
	}
	tbl, _ = rowDeltaCommit(t, tbl, "", map[string][]int64{"file://" + path: positions})
	if hist, err = changelog.MainHistory(tbl.Metadata()); err != nil {
		t.Fatal(err)
	}
	before, err := derivedRows(t, tbl, hist[0], rowMultiset{})
	if err != nil {
		t.Fatal(err)
	}
	want, err := derivedRowsWith(t, tbl, hist[1], before, Options{RowGroups: NewRowGroupCache(64 << 20)})
	if err != nil {
		t.Fatal(err)
	}
	compareMultisets(t, "undamaged", scanRows(t, tbl, hist[1].SnapshotID), want)
	// Every third offset: each flip derives with the cache, and again
	// after an error (under -race the whole test took a minute at all).
	flipEveryWayEvery(t, path, 3, func(what string) error {
		// A cache per flip: the file changes in place, which a lake's
		// files never do.
		cache := NewRowGroupCache(64 << 20)
		got, err := derivedRowsWith(t, tbl, hist[1], before, Options{RowGroups: cache})
		if err == nil {
			compareMultisets(t, what, want, got)
			return nil
		}
		if _, again := derivedRowsWith(t, tbl, hist[1], before, Options{RowGroups: cache}); again != nil && errors.Is(again, context.DeadlineExceeded) {
			t.Fatalf("%s: a derivation waited for a decode that had ended: %v", what, again)
		}
		return err
	})
}

// flipEveryWay damages the file at path every way (damages) at every
// damage offset, one at a time, and reads it after each with read, which
// checks what it read against the undamaged file's and returns its error.
// Every error must name the file, and some damage must be detected.
func flipEveryWay(t *testing.T, path string, read func(what string) error) {
	t.Helper()
	flipEveryWayEvery(t, path, 1, read)
}

// flipEveryWayEvery is flipEveryWay at every stride-th damage offset.
func flipEveryWayEvery(t *testing.T, path string, stride int, read func(what string) error) {
	t.Helper()
	orig, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := os.WriteFile(path, orig, 0o600); err != nil {
			t.Fatal(err)
		}
	}()
	var errs, right int
	for i, off := range damageOffsets(orig) {
		if i%stride != 0 {
			continue
		}
		for _, dmg := range damages {
			if err := os.WriteFile(path, damaged(orig, off, dmg.do), 0o600); err != nil {
				t.Fatal(err)
			}
			what := dmg.name + " at " + strconv.Itoa(off)
			if err := read(what); err != nil {
				if !strings.Contains(err.Error(), path) {
					t.Fatalf("%s: error does not name %s: %v", what, path, err)
				}
				errs++
				continue
			}
			right++
		}
	}
	t.Logf("%d flips: %d errors naming the file, %d reads with the right rows", errs+right, errs, right)
	if errs == 0 {
		t.Fatal("no flip was detected: the test damages nothing")
	}
}

// withoutManifestList writes a copy of the table's metadata in which the
// snapshot names no manifest list, and opens the table from it.
func withoutManifestList(t *testing.T, tbl *table.Table, snapshotID int64) *table.Table {
	t.Helper()
	raw, err := os.ReadFile(localPath(tbl.MetadataLocation()))
	if err != nil {
		t.Fatal(err)
	}
	var meta map[string]any
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.UseNumber() // snapshot ids do not fit a float64
	if err := dec.Decode(&meta); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, s := range meta["snapshots"].([]any) {
		snap := s.(map[string]any)
		if snap["snapshot-id"].(json.Number).String() == strconv.FormatInt(snapshotID, 10) {
			delete(snap, "manifest-list")
			found = true
		}
	}
	if !found {
		t.Fatalf("snapshot %d not in the metadata", snapshotID)
	}
	out, err := json.Marshal(meta)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "damaged.metadata.json")
	if err := os.WriteFile(path, out, 0o600); err != nil {
		t.Fatal(err)
	}
	damaged, err := lake.OpenTableAt(context.Background(), tbl.Identifier(), path, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	return damaged
}

// TestDeriveSnapshotWithoutManifestListIsDamage reproduces issue 12, row
// 10: a snapshot whose manifest list is missing derived 0 records with no
// error (iceberg-go reads it as no files) and would be indexed as empty
// forever. Its changes, the changes of the snapshot after it (which need
// its state) and its live rows are now errors naming the snapshot.
func TestDeriveSnapshotWithoutManifestListIsDamage(t *testing.T) {
	ctx := context.Background()
	cat := newTestCatalog(t)
	tbl := createTable(t, cat, "nolist", testSchema())
	tbl = appendJSON(t, tbl, jsonRows(0, 10), 0)
	tbl = deleteWhere(t, tbl, idIn(3)) // copy-on-write: needs its parent's files
	hist, err := changelog.MainHistory(tbl.Metadata())
	if err != nil {
		t.Fatal(err)
	}
	damaged := withoutManifestList(t, tbl, hist[0].SnapshotID)
	want := strconv.FormatInt(hist[0].SnapshotID, 10)
	for _, step := range []struct {
		name string
		read func() (*changelog.Changes, error)
	}{
		{"changes of the snapshot", func() (*changelog.Changes, error) { return Derive(ctx, damaged, hist[0], Options{}) }},
		{"changes of its child", func() (*changelog.Changes, error) { return Derive(ctx, damaged, hist[1], Options{}) }},
		{"changes of its child, planned through a cache", func() (*changelog.Changes, error) {
			return Derive(ctx, damaged, hist[1], Options{PlanCache: NewPlanCache(4, 1<<10)})
		}},
		{"live rows of the snapshot", func() (*changelog.Changes, error) { return ReadSnapshot(ctx, damaged, hist[0], Options{}) }},
	} {
		c, err := step.read()
		if err == nil {
			t.Errorf("%s: %d records and no error", step.name, len(c.Records))
			c.Release()
			continue
		}
		if !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "manifest list") {
			t.Errorf("%s: error does not name the snapshot's manifest list: %v", step.name, err)
		}
	}
}
