package maintain_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/rs/zerolog"

	"github.com/lakegw/lakegw/lake"
	"github.com/lakegw/lakegw/quickstart"
)

// openCatalog opens lakegw's embedded catalog (SQLite and a local
// warehouse) in a temporary directory, as serve and quickstart do.
func openCatalog(t testing.TB) (catalog.Catalog, string) {
	t.Helper()
	dir := t.TempDir()
	cat, err := lake.OpenCatalog(context.Background(), dir, nil)
	if err != nil {
		t.Fatalf("open catalog: %v", err)
	}
	return cat, filepath.Join(dir, "warehouse")
}

// localDir is the directory of a file:// table location.
func localDir(loc string) string {
	return strings.TrimPrefix(strings.TrimPrefix(loc, "file://"), "file:")
}

// dirStats counts the files under dir, the metadata JSON files, and the
// size of the newest (largest) metadata JSON.
type dirStats struct {
	files, metadataJSON, dataFiles int
	maxJSONBytes                   int64
}

func statDir(t testing.TB, dir string) dirStats {
	t.Helper()
	var s dirStats
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		s.files++
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case strings.HasSuffix(p, ".metadata.json"):
			s.metadataJSON++
			s.maxJSONBytes = max(s.maxJSONBytes, info.Size())
		case strings.Contains(p, string(os.PathSeparator)+"data"+string(os.PathSeparator)):
			s.dataFiles++
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", dir, err)
	}
	return s
}

func loadTable(t testing.TB, cat catalog.Catalog, ident table.Identifier) *table.Table {
	t.Helper()
	tbl, err := cat.LoadTable(context.Background(), ident)
	if err != nil {
		t.Fatalf("load %v: %v", ident, err)
	}
	return tbl
}

func setProps(t testing.TB, cat catalog.Catalog, ident table.Identifier, props iceberg.Properties) {
	t.Helper()
	tx := loadTable(t, cat, ident).NewTransaction()
	if err := tx.SetProperties(props); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(context.Background()); err != nil {
		t.Fatalf("set properties: %v", err)
	}
}

// agedDemo creates the demo table with the aggressive expiry properties
// and commits steps demo snapshots.
func agedDemo(t *testing.T, steps int) (catalog.Catalog, *quickstart.Demo, zerolog.Logger) {
	t.Helper()
	ctx := context.Background()
	cat, _ := openCatalog(t)
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	d := quickstart.NewDemo(cat, log, quickstart.DemoOptions{Seed: 5})
	if _, err := d.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	setProps(t, cat, quickstart.DefaultTable(), aggressive)
	for range steps {
		if _, err := d.Step(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return cat, d, log
}
