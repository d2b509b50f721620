package derive

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lakegw/lakegw/changelog"
)

// FuzzDeriveDataFile gives random bytes as the data file of a small
// table's append (issue 12: "random Parquet bytes as a data file"). The
// derivation must return within a bound either every row the manifest
// counts or an error naming the file. It must never end the process (as a
// panic in iceberg-go's scanner goroutines did), and never need Derive's
// last-resort recover (": panic: " in the error): a file's faults are to
// be caught where the file is checked. The seed corpus is the table's own
// file, a damaged copy and the data files of a fixture table, so `go test
// -run FuzzDeriveDataFile` runs a handful of derivations.
func FuzzDeriveDataFile(f *testing.F) {
	// One table for every input of this process (a fuzz worker runs many).
	tbl := createTable(f, newTestCatalog(f), "fuzz", hostileSchema())
	tbl = appendJSON(f, tbl, hostileRows(0, 50), 0)
	hist, err := changelog.MainHistory(tbl.Metadata())
	if err != nil {
		f.Fatal(err)
	}
	ref := hist[0]
	path := firstDataFile(f, tbl, ref.SnapshotID)
	orig, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(orig)
	f.Add(damaged(orig, len(orig)-40, damages[1].do))
	for _, p := range fixtureDataFiles() {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<20 {
			return // bounds the work of one input
		}
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		filesChecked.forget()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		c, err := Derive(ctx, tbl, ref, Options{})
		if ctx.Err() != nil {
			t.Fatalf("derivation of a %d-byte file did not return within 20 s", len(data))
		}
		if err != nil {
			if strings.Contains(err.Error(), ": panic: ") {
				t.Fatalf("a panic reached Derive's recover: %v", err)
			}
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("error does not name the data file: %v", err)
			}
			return
		}
		defer c.Release()
		if len(c.Records) != 50 {
			t.Fatalf("derived %d records from a file the manifest says holds 50 rows", len(c.Records))
		}
	})
}

// fixtureDataFiles returns a few data files of the fixture tables, when
// they lie beside the repository.
func fixtureDataFiles() []string {
	for _, dir := range []string{"../../shared/fixtures/iceberg", "/work/shared/fixtures/iceberg"} {
		files, _ := filepath.Glob(filepath.Join(dir, "duckdb_equality_deletes/warehouse/mydb/mytable/data/*.parquet"))
		if len(files) > 0 {
			return files[:min(len(files), 3)]
		}
	}
	return nil
}
