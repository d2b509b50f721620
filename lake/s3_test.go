package lake

import (
	"context"
	"errors"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/utils"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/lakegw/lakegw/internal/pgtest"
	"github.com/lakegw/lakegw/internal/s3test"
)

// s3Lake opens a SQL catalog on a fresh PostgreSQL database whose
// warehouse is bucket "lake" of a fresh S3 server: the deployment of
// several gateways sharing one lake.
func s3Lake(t *testing.T) (catalog.Catalog, iceberg.Properties) {
	t.Helper()
	s3 := s3test.Start(t)
	s3.CreateBucket(t, "lake")
	props := iceberg.Properties(s3.LakeProps(pgtest.Start(t).NewDatabase(t), "s3://lake/wh"))
	cat, err := OpenCatalog(context.Background(), t.TempDir(), props)
	if err != nil {
		t.Fatal(err)
	}
	return cat, props
}

func appendIDs(t *testing.T, tbl *table.Table, ids ...int64) *table.Table {
	t.Helper()
	sc, err := table.SchemaToArrowSchema(pointerSchema, nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues(ids, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()
	at := array.NewTableFromRecords(sc, []arrow.RecordBatch{rec})
	defer at.Release()
	next, err := tbl.AppendTable(context.Background(), at, 100, nil)
	if err != nil {
		t.Fatalf("append %v: %v", ids, err)
	}
	return next
}

func scanIDs(t *testing.T, tbl *table.Table) []int64 {
	t.Helper()
	at, err := tbl.Scan().ToArrowTable(context.Background())
	if err != nil {
		t.Fatalf("scan %s: %v", tbl.MetadataLocation(), err)
	}
	defer at.Release()
	var ids []int64
	for _, ch := range at.Column(0).Data().Chunks() {
		ids = append(ids, ch.(*array.Int64).Int64Values()...)
	}
	slices.Sort(ids)
	return ids
}

// A lake on S3 with its catalog on PostgreSQL: every way lake/ reaches a
// table and its files (the catalog, the metadata pointer, LoadTableAt, a
// table registered by its metadata location, ReadFile, RemoveFiles) works
// on s3:// locations, and sees what iceberg-go wrote.
func TestCatalogOnPostgresWithWarehouseOnS3(t *testing.T) {
	ctx := context.Background()
	cat, props := s3Lake(t)
	ident := table.Identifier{"ns", "t"}
	if err := cat.CreateNamespace(ctx, ident[:1], nil); err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.CreateTable(ctx, ident, pointerSchema)
	if err != nil {
		t.Fatal(err)
	}
	tbl = appendIDs(t, tbl, 1, 2, 3)
	tbl = appendIDs(t, tbl, 4)
	if !strings.HasPrefix(tbl.Location(), "s3://lake/wh/") || !strings.HasPrefix(tbl.MetadataLocation(), "s3://lake/wh/") {
		t.Fatalf("table at %s, metadata %s: want both in s3://lake/wh/", tbl.Location(), tbl.MetadataLocation())
	}
	want := []int64{1, 2, 3, 4}

	// The pointer reader queries PostgreSQL with its own placeholders.
	p, err := OpenMetadataPointers(ctx, cat)
	if err != nil || p == nil {
		t.Fatalf("pointers of a PostgreSQL catalog: %v, %v", p, err)
	}
	defer p.Close()
	loc, ok, err := p.Location(ctx, ident)
	if err != nil || !ok || loc != tbl.MetadataLocation() {
		t.Fatalf("pointer %q %v %v, want %s", loc, ok, err, tbl.MetadataLocation())
	}
	if _, ok, err := p.Location(ctx, table.Identifier{"ns", "missing"}); err != nil || ok {
		t.Fatalf("missing table: %v %v", ok, err)
	}

	at, err := LoadTableAt(ctx, cat, ident, loc, NewMetadataReader())
	if err != nil {
		t.Fatal(err)
	}
	if got := scanIDs(t, at); !slices.Equal(got, want) {
		t.Fatalf("LoadTableAt scan: %v, want %v", got, want)
	}
	reg, err := OpenTableAt(ctx, ident, loc, props, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := scanIDs(t, reg); !slices.Equal(got, want) {
		t.Fatalf("registered table scan: %v, want %v", got, want)
	}

	fsys, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFile(fsys, tbl.CurrentSnapshot().ManifestList); err != nil || len(b) == 0 {
		t.Fatalf("read the manifest list: %d bytes, %v", len(b), err)
	}
	wfs, ok := fsys.(icebergio.WriteFileIO)
	if !ok {
		t.Fatalf("the S3 IO %T cannot write", fsys)
	}
	stray := strings.TrimSuffix(tbl.Location(), "/") + "/data/stray.parquet"
	if err := wfs.WriteFile(stray, []byte("not parquet")); err != nil {
		t.Fatal(err)
	}
	if n, err := RemoveFiles(ctx, tbl, []string{stray}); n != 1 || err != nil {
		t.Fatalf("remove %s: %d removed, %v", stray, n, err)
	}
	if _, err := fsys.Open(stray); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("open a removed object: %v, want fs.ErrNotExist", err)
	}
	if got := scanIDs(t, tbl); !slices.Equal(got, want) {
		t.Fatalf("scan after the stray object went: %v, want %v", got, want)
	}

	// A table the catalog loads gets lake's FileIOs, and commits and
	// reads through them as iceberg-go's own.
	loaded, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	loaded = appendIDs(t, loaded, 5)
	if got, want := scanIDs(t, loaded), []int64{1, 2, 3, 4, 5}; !slices.Equal(got, want) {
		t.Fatalf("scan after a commit of the loaded table: %v, want %v", got, want)
	}
	if loc, _, err := p.Location(ctx, ident); err != nil || loc != loaded.MetadataLocation() {
		t.Fatalf("pointer after the commit: %q %v, want %s", loc, err, loaded.MetadataLocation())
	}
}

// Every S3 FileIO of one set of properties shares one AWS configuration
// (and so its connections and credentials); other properties get another,
// and a configuration the caller put in the context is kept.
func TestS3FileIOsShareTheirConfiguration(t *testing.T) {
	ctx := context.Background()
	props := map[string]string{"s3.region": "eu-west-1", "s3.access-key-id": "a", "s3.secret-access-key": "b"}
	config := func(ctx context.Context, props map[string]string) *aws.Config {
		t.Helper()
		ctx, err := withS3Config(ctx, props)
		if err != nil {
			t.Fatal(err)
		}
		return utils.GetAwsConfig(ctx)
	}
	a, b := config(ctx, props), config(ctx, maps.Clone(props))
	if a == nil || a != b || a.HTTPClient == nil {
		t.Fatalf("two loads of the same properties: configurations %p and %p (HTTP client %v)", a, b, a.HTTPClient)
	}
	other := maps.Clone(props)
	other["s3.endpoint"] = "http://127.0.0.1:1"
	if c := config(ctx, other); c == a {
		t.Fatal("different properties share a configuration")
	}
	mine := &aws.Config{Region: "mine"}
	if c := config(utils.WithAwsConfig(ctx, mine), props); c != mine {
		t.Fatalf("the caller's configuration was replaced by %p", c)
	}
	for loc, want := range map[string]bool{"s3://b/k": true, "S3A://b/k": true, "file:///x": false, "/x": false, "gs://b/k": false} {
		if got := isS3Location(loc); got != want {
			t.Errorf("isS3Location(%q) = %v", loc, got)
		}
	}
}

// BenchmarkS3FileIO is what a Table.FS call costs on S3: iceberg-go's
// (a new AWS configuration and HTTP transport each time) against lake's.
func BenchmarkS3FileIO(b *testing.B) {
	s3 := s3test.Start(b)
	props := s3.FileIOProps()
	ctx := context.Background()
	for _, c := range []struct {
		name string
		load func(context.Context, map[string]string, string) (icebergio.IO, error)
	}{{"iceberg-go", icebergio.LoadFS}, {"lake", loadFS}} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				if _, err := c.load(ctx, props, "s3://lake/x"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
