package topics

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
)

// TopicConfig is how one table is served.
type TopicConfig struct {
	// Format is the record format (debezium-json by default).
	Format string
	// Partitions spreads records by key hash when > 1.
	Partitions int32
	// Compression of fetched batches: none, gzip, snappy, lz4, zstd.
	Compression string
	// KeyColumns are the key of tables without identifier fields.
	KeyColumns []string
}

// Table properties that configure a table's topic; they travel with the
// table, so every gateway serving it agrees on partitions and format.
const (
	PropFormat      = "lakegw.format"
	PropPartitions  = "lakegw.partitions"
	PropCompression = "lakegw.compression"
	PropKeyColumns  = "lakegw.key-columns"
)

// DefaultTopicConfig is used where neither the table nor the operator says
// otherwise.
func DefaultTopicConfig() TopicConfig {
	return TopicConfig{Format: "debezium-json", Partitions: 1, Compression: "none"}
}

// Compressions lists the accepted compression names.
var Compressions = []string{"none", "gzip", "snappy", "lz4", "zstd"}

// withTableProps overlays the table's lakegw.* properties.
func (c TopicConfig) withTableProps(props iceberg.Properties) (TopicConfig, error) {
	if v, ok := props[PropFormat]; ok {
		c.Format = v
	}
	if v, ok := props[PropCompression]; ok {
		c.Compression = v
	}
	if v, ok := props[PropPartitions]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > 10000 {
			return c, fmt.Errorf("table property %s=%q: want an integer in [1,10000]", PropPartitions, v)
		}
		c.Partitions = int32(n)
	}
	if v, ok := props[PropKeyColumns]; ok {
		c.KeyColumns = strings.Split(v, ",")
	}
	return c, c.validate()
}

func (c TopicConfig) validate() error {
	ok := false
	for _, s := range Compressions {
		ok = ok || s == c.Compression
	}
	if !ok {
		return fmt.Errorf("compression %q: want one of %s", c.Compression, strings.Join(Compressions, ", "))
	}
	if c.Partitions < 1 {
		return fmt.Errorf("partitions %d: want >= 1", c.Partitions)
	}
	return nil
}

// Config configures the registry.
type Config struct {
	// PollInterval is how often each table's metadata is checked for new
	// snapshots.
	PollInterval time.Duration
	// ListInterval is how often the catalog is listed for new tables.
	ListInterval time.Duration
	// Defaults apply to every topic; table properties override them.
	Defaults TopicConfig
	// CatalogProps are the properties used to open registered tables' files.
	CatalogProps iceberg.Properties
	// ChangesCacheBytes bounds the memory of derived snapshots kept for
	// fetches, across all topics.
	ChangesCacheBytes int64
}
