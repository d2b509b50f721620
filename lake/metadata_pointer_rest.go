package lake

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"
	"github.com/apache/iceberg-go/table"
)

// restCatalog is an iceberg-go REST catalog as OpenCatalog opened it, with
// the properties it was opened from: OpenMetadataPointers opens a second
// client of the same server. Every method of the REST catalog is promoted
// unchanged.
type restCatalog struct {
	*rest.Catalog
	name  string
	props iceberg.Properties
}

// restSnapshotLoadingMode is iceberg-go's REST catalog property that sends
// `snapshots=<mode>` with every loadTable (the REST spec's parameter).
const restSnapshotLoadingMode = "snapshot-loading-mode"

// openRESTPointers reads metadata locations through a REST client that
// asks for the snapshots branches and tags reference only: the answer, and
// its parse, no longer carry the table's whole history. A server that
// ignores the parameter answers in full, which is still right.
func openRESTPointers(ctx context.Context, c *restCatalog) (*MetadataPointers, error) {
	props := maps.Clone(c.props)
	props[restSnapshotLoadingMode] = string(rest.SnapshotModeRefs)
	refs, err := catalog.Load(ctx, c.name, props)
	if err != nil {
		return nil, fmt.Errorf("open a pointer client of REST catalog %q: %w", c.name, err)
	}
	lookup := func(ctx context.Context, ident table.Identifier) (string, bool, error) {
		tbl, err := refs.LoadTable(ctx, ident)
		switch {
		case errors.Is(err, catalog.ErrNoSuchTable):
			return "", false, nil
		case err != nil:
			return "", false, fmt.Errorf("read the metadata location of %s: %w", strings.Join(ident, "."), err)
		}
		return tbl.MetadataLocation(), true, nil
	}
	closeFn := func() error {
		if cl, ok := refs.(interface{ Close() error }); ok {
			return cl.Close()
		}
		return nil
	}
	return &MetadataPointers{lookup: lookup, close: closeFn}, nil
}
