package lake

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/catalog/rest"       // registers type=rest
	sqlcat "github.com/apache/iceberg-go/catalog/sql" // registers type=sql
	_ "github.com/apache/iceberg-go/io/gocloud/s3"    // registers s3://, s3a://, s3n://, oss://: a warehouse on S3-compatible storage
	_ "github.com/jackc/pgx/v5/stdlib"                // registers sql.driver=pgx: a SQL catalog on PostgreSQL
	_ "modernc.org/sqlite"                            // the embedded catalog's driver: pure Go, no cgo
)

// EmbeddedCatalogName is the catalog name rows of the embedded SQL catalog
// carry; other tools opening catalog.db must use it too.
const EmbeddedCatalogName = "lakegw"

// EmbeddedProps returns the catalog properties of the embedded default: an
// Iceberg SQL catalog on SQLite (pure-Go driver) and a local warehouse, both
// under dataDir.
func EmbeddedProps(dataDir string) (iceberg.Properties, error) {
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return nil, fmt.Errorf("data dir %s: %w", dataDir, err)
	}
	warehouse := filepath.Join(abs, "warehouse")
	// The data dir and warehouse are created owner-only, as everything
	// lakegw creates: they hold table rows.
	if err := os.MkdirAll(warehouse, 0o700); err != nil {
		return nil, fmt.Errorf("create warehouse %s: %w", warehouse, err)
	}
	return iceberg.Properties{
		"type":        "sql",
		"sql.driver":  "sqlite",
		"sql.dialect": "sqlite",
		// WAL and a busy timeout let the gateway poll while a writer
		// (quickstart, the CLI, a test) commits.
		"uri":       "file:" + filepath.Join(abs, "catalog.db") + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)",
		"warehouse": "file://" + warehouse,
	}, nil
}

// OpenCatalog opens an iceberg-go catalog from properties ("type" selects
// sql, rest, glue, hive...). With no properties it opens the embedded
// default under dataDir.
func OpenCatalog(ctx context.Context, dataDir string, props iceberg.Properties) (catalog.Catalog, error) {
	name := props["name"]
	if len(props) == 0 || props["type"] == "" && props["uri"] == "" {
		emb, err := EmbeddedProps(dataDir)
		if err != nil {
			return nil, err
		}
		for k, v := range props {
			emb[k] = v
		}
		props, name = emb, EmbeddedCatalogName
	}
	if name == "" {
		name = EmbeddedCatalogName
	}
	cat, err := catalog.Load(ctx, name, props)
	if err != nil {
		return nil, fmt.Errorf("open catalog %q (type %s): %w", name, props["type"], err)
	}
	if c, ok := cat.(*sqlcat.Catalog); ok {
		// Keep what the catalog was opened from: OpenMetadataPointers
		// opens the same database.
		return &sqlCatalog{Catalog: c, name: name, driver: props[sqlcat.DriverKey],
			dialect: strings.ToLower(props[sqlcat.DialectKey]), uri: props["uri"], props: maps.Clone(props)}, nil
	}
	if c, ok := cat.(*rest.Catalog); ok {
		// Likewise: OpenMetadataPointers opens a second client.
		return &restCatalog{Catalog: c, name: name, props: maps.Clone(props)}, nil
	}
	return cat, nil
}

// ParseIdent splits "<namespace>.<table>" at its last dot (namespaces may
// themselves be nested with dots).
func ParseIdent(name string) ([]string, error) {
	i := strings.LastIndexByte(name, '.')
	if i <= 0 || i == len(name)-1 {
		return nil, fmt.Errorf("table name %q: want <namespace>.<table>", name)
	}
	return append(strings.Split(name[:i], "."), name[i+1:]), nil
}

// BareNamespace is the namespace whose tables are served under their bare
// names: a Kafka application's topic "orders" (no dot) is the table
// kafka.orders, so that it switches to lakegw with its topic names
// unchanged. Any other table's topic is "<namespace>.<table>".
const BareNamespace = "kafka"

// TopicName is the Kafka topic name of a table: "<namespace>.<table>", or
// the table's bare name in BareNamespace.
func TopicName(ident []string) string {
	if len(ident) == 2 && ident[0] == BareNamespace {
		return ident[1]
	}
	return strings.Join(ident, ".")
}

// TopicIdent is the table a topic name stands for (TopicName's inverse):
// a bare name is a table of BareNamespace, a dotted one
// "<namespace>.<table>" split at its last dot.
func TopicIdent(topic string) ([]string, error) {
	if topic == "" {
		return nil, fmt.Errorf("empty topic name")
	}
	if !strings.Contains(topic, ".") {
		return []string{BareNamespace, topic}, nil
	}
	return ParseIdent(topic)
}
