package lake

import (
	"context"
	"fmt"
	"strings"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// LoadTableAt loads table ident of cat from the metadata file at loc, the
// location MetadataPointers read for it, parsing the file with r (which
// reuses what it parsed of the table's previous files). Tables of other
// catalogs than SQL ones, and compressed metadata files, are loaded by
// the catalog as usual.
func LoadTableAt(ctx context.Context, cat catalog.Catalog, ident table.Identifier, loc string, r *MetadataReader) (*table.Table, error) {
	c, ok := cat.(*sqlCatalog)
	if !ok || !strings.HasSuffix(loc, ".metadata.json") ||
		strings.HasSuffix(loc, ".gz.metadata.json") || strings.HasSuffix(loc, ".zstd.metadata.json") {
		return cat.LoadTable(ctx, ident)
	}
	fsF := loadFSFunc(c.props, loc)
	fs, err := fsF(ctx)
	if err != nil {
		return nil, err
	}
	doc, err := ReadFile(fs, loc)
	if err != nil {
		return nil, fmt.Errorf("metadata file: %w", err)
	}
	meta, err := r.Parse(doc)
	if err != nil {
		return nil, fmt.Errorf("parse metadata file %s: %w", loc, err)
	}
	return table.New(ident, meta, loc, fsF, c), nil
}
