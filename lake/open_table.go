package lake

import (
	"context"
	"fmt"

	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
)

// OpenTableAt loads a table from a metadata file, reading every file of the
// table through the remaps. It is how registered tables (and tests of copied
// fixtures) are opened; catalog tables go through the catalog.
func OpenTableAt(ctx context.Context, ident table.Identifier, metadataLocation string, props map[string]string, remaps []Remap) (*table.Table, error) {
	fsF := func(ctx context.Context) (icebergio.IO, error) {
		mapped, err := applyRemaps(remaps, metadataLocation)
		if err != nil {
			return nil, err
		}
		inner, err := loadFS(ctx, props, mapped)
		if err != nil {
			return nil, fmt.Errorf("file IO for %s: %w", metadataLocation, err)
		}
		return NewRemapIO(inner, remaps), nil
	}
	tbl, err := table.NewFromLocation(ctx, ident, metadataLocation, fsF, nil)
	if err != nil {
		return nil, fmt.Errorf("load table %v from %s: %w", ident, metadataLocation, err)
	}
	return tbl, nil
}
