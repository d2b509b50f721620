package lake

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	sqlcat "github.com/apache/iceberg-go/catalog/sql"
	"github.com/apache/iceberg-go/table"
)

// sqlCatalog is an iceberg-go SQL catalog as OpenCatalog opened it, with
// the properties it was opened from: OpenMetadataPointers opens the same
// database. Every method of the SQL catalog is promoted unchanged.
type sqlCatalog struct {
	*sqlcat.Catalog
	name, driver, dialect, uri string
	// props are the catalog's properties: LoadTableAt opens a table's
	// files with them, as the catalog's own LoadTable does.
	props iceberg.Properties
}

// MetadataPointers reads the current metadata location of a table without
// loading its history: from a SQL catalog's database (its iceberg_tables
// row, by primary key: one indexed query), or from a REST catalog asked for
// the referenced snapshots only (`snapshots=refs`), where LoadTable reads
// and parses the whole metadata JSON, which grows with the table's
// history. A table watcher polls it and loads the table only when the
// pointer moved. Safe for concurrent use; Close releases its connections.
type MetadataPointers struct {
	lookup func(ctx context.Context, ident table.Identifier) (loc string, ok bool, err error)
	close  func() error
	reads  atomic.Int64
}

// OpenMetadataPointers opens the pointer reader of cat when cat is a SQL
// catalog opened by OpenCatalog on a dialect whose placeholders it knows
// (sqlite, mysql, postgres) or a REST catalog it opened; otherwise it
// returns nil and callers load the table on every poll.
func OpenMetadataPointers(ctx context.Context, cat catalog.Catalog) (*MetadataPointers, error) {
	switch c := cat.(type) {
	case *sqlCatalog:
		return openSQLPointers(c)
	case *restCatalog:
		return openRESTPointers(ctx, c)
	}
	return nil, nil
}

func openSQLPointers(c *sqlCatalog) (*MetadataPointers, error) {
	var args [3]string
	switch c.dialect {
	case "sqlite", "mysql":
		args = [3]string{"?", "?", "?"}
	case "postgres":
		args = [3]string{"$1", "$2", "$3"}
	default:
		return nil, nil
	}
	db, err := sql.Open(c.driver, strings.TrimPrefix(c.uri, "sql://"))
	if err != nil {
		return nil, fmt.Errorf("open the database of catalog %q: %w", c.name, err)
	}
	// The watchers of one gateway poll it in turn: a few connections do.
	db.SetMaxOpenConns(2)
	query := "SELECT metadata_location FROM iceberg_tables WHERE catalog_name = " +
		args[0] + " AND table_namespace = " + args[1] + " AND table_name = " + args[2]
	lookup := func(ctx context.Context, ident table.Identifier) (string, bool, error) {
		ns := ident[:len(ident)-1]
		if strings.Contains(strings.Join(ns, ""), ".") || strings.Contains(strings.Join(ns, "."), "__iceberg_namespace_v1__:") {
			// iceberg-go stores such namespaces JSON-encoded, sometimes
			// under a legacy key too: leave them to LoadTable.
			return "", false, nil
		}
		var v sql.NullString
		err := db.QueryRowContext(ctx, query, c.name, strings.Join(ns, "."), ident[len(ident)-1]).Scan(&v)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return "", false, nil
		case err != nil:
			return "", false, fmt.Errorf("read the metadata location of %s: %w", strings.Join(ident, "."), err)
		}
		return v.String, v.Valid, nil
	}
	return &MetadataPointers{lookup: lookup, close: db.Close}, nil
}

// Location returns the current metadata location of table ident. ok is
// false when this reader cannot tell (no such table, a namespace stored in
// the SQL catalog's encoded form): the caller loads the table.
func (m *MetadataPointers) Location(ctx context.Context, ident table.Identifier) (loc string, ok bool, err error) {
	if len(ident) < 2 {
		return "", false, nil
	}
	m.reads.Add(1)
	return m.lookup(ctx, ident)
}

// Reads is how many pointer look-ups reached the database.
func (m *MetadataPointers) Reads() int64 { return m.reads.Load() }

// Close releases the database connections.
func (m *MetadataPointers) Close() error { return m.close() }
