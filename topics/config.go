package topics

import (
	"cmp"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/changelog"
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
	// SchemaMode says which schema records are written in: SchemaCurrent
	// (the table's current schema, projected by field id as Iceberg
	// readers do) or SchemaAsWritten (each snapshot's own).
	SchemaMode string
	// BatchRecords is the number of records per record batch. Batches
	// start every BatchRecords records of a snapshot's segment, so every
	// gateway of a table cuts the same batches when the table says it
	// (lakegw.batch-records).
	BatchRecords int

	// RetentionMs is the topic's retention.ms for lakegw's own (LSM)
	// tables: how long their changelog is kept past snapshot expiry. -1
	// keeps it forever. Tables lakegw does not write keep what their own
	// snapshot history keeps, whatever this says.
	RetentionMs int64
	// RetentionBytes is retention.bytes of lakegw's own tables (-1: no
	// bound by size).
	RetentionBytes int64
	// MaxPinMs bounds how far back a committed group offset may hold a
	// table's history beyond its retention (lakegw.consumer.max-pin).
	MaxPinMs int64
	// MaxPinSnapshots bounds the snapshots such a pin keeps on a table
	// whose pins hold snapshots (lakegw.consumer.max-pin-snapshots).
	MaxPinSnapshots int64
}

// Table properties that configure a table's topic; they travel with the
// table, so every gateway serving it agrees on partitions and format.
// TopicConfig parses every one of them (withTableProps, LogRetention);
// those that lsm/ and maintain/ read as well are defined in changelog/,
// below all three, and named here too.
const (
	PropFormat          = changelog.PropFormat
	PropPartitions      = changelog.PropPartitions
	PropCompression     = "lakegw.compression"
	PropKeyColumns      = "lakegw.key-columns"
	PropBatchRecords    = "lakegw.batch-records"
	PropSchemaMode      = "lakegw.schema-mode"
	PropRetentionMs     = changelog.PropRetentionMs
	PropRetentionBytes  = changelog.PropRetentionBytes
	PropMaxPinMs        = changelog.PropMaxPinMs
	PropMaxPinSnapshots = changelog.PropMaxPinSnapshots
)

// The schema modes (lakegw.schema-mode).
const (
	// SchemaCurrent writes every record in the table's current schema:
	// a before-image equals the row as every Iceberg reader sees it now,
	// and a schema change re-encodes the whole topic.
	SchemaCurrent = "current"
	// SchemaAsWritten writes each snapshot's records in the schema it was
	// written with, as Debezium writes each event in the schema of its
	// time.
	SchemaAsWritten = "as-written"
)

// SchemaModes lists the accepted schema modes.
var SchemaModes = []string{SchemaCurrent, SchemaAsWritten}

// DefaultTopicConfig is used where neither the table nor the operator says
// otherwise.
func DefaultTopicConfig() TopicConfig {
	return TopicConfig{Format: "debezium-json", Partitions: 1, Compression: "none", BatchRecords: DefaultBatchRecords, SchemaMode: SchemaCurrent,
		RetentionMs: changelog.DefaultRetentionMs, RetentionBytes: changelog.DefaultRetentionBytes, MaxPinMs: changelog.DefaultMaxPinMs,
		MaxPinSnapshots: changelog.DefaultMaxPinSnapshots}
}

// DefaultBatchRecords is the records per batch where neither the table nor
// the operator says otherwise; MaxBatchRecords bounds what they may say
// (a batch is encoded whole, in memory).
const (
	DefaultBatchRecords = 1000
	MaxBatchRecords     = 100000
)

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
	c.SchemaMode = cmp.Or(c.SchemaMode, SchemaCurrent)
	if v, ok := props[PropSchemaMode]; ok {
		c.SchemaMode = v
	}
	// A raw topic's records are the rows as produced, in the partition
	// each was produced to: no other format or key applies, and no other
	// table can be read as one.
	switch {
	case changelog.IsRawTable(props):
		c.Format, c.KeyColumns = changelog.RawFormat, nil
	case c.Format == changelog.RawFormat:
		return c, fmt.Errorf("format %q: only a raw topic's table (%s=true) has raw records", changelog.RawFormat, changelog.PropRaw)
	}
	c.BatchRecords = cmp.Or(c.BatchRecords, DefaultBatchRecords)
	if v, ok := props[PropBatchRecords]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxBatchRecords {
			return c, fmt.Errorf("table property %s=%q: want an integer in [1,%d]", PropBatchRecords, v, MaxBatchRecords)
		}
		c.BatchRecords = n
	}
	// Operator defaults carry no retention (there are no flags for it): a
	// zero means Kafka's default, and zero is no sensible value for any of
	// the three.
	def := changelog.DefaultRetention()
	ret, err := changelog.ParseRetention(props, changelog.Retention{Ms: cmp.Or(c.RetentionMs, def.Ms),
		Bytes: cmp.Or(c.RetentionBytes, def.Bytes), MaxPinMs: cmp.Or(c.MaxPinMs, def.MaxPinMs),
		MaxPinSnapshots: cmp.Or(c.MaxPinSnapshots, def.MaxPinSnapshots)})
	if err != nil {
		return c, err
	}
	c.RetentionMs, c.RetentionBytes, c.MaxPinMs, c.MaxPinSnapshots = ret.Ms, ret.Bytes, ret.MaxPinMs, ret.MaxPinSnapshots
	return c, c.Validate()
}

// CheckTableProps reports what of a table's lakegw.* properties no topic
// could be served with: the one parser of them, for a change proposed
// through IncrementalAlterConfigs before it is committed.
func CheckTableProps(props iceberg.Properties) error {
	_, err := DefaultTopicConfig().withTableProps(props)
	return err
}

// Validate reports a setting no topic can be served with; serve checks its
// defaults with it before serving anything.
func (c TopicConfig) Validate() error {
	if _, err := changelog.FormatByName(c.Format); err != nil {
		return err
	}
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
	if c.SchemaMode != SchemaCurrent && c.SchemaMode != SchemaAsWritten {
		return fmt.Errorf("schema mode %q: want %s", c.SchemaMode, strings.Join(SchemaModes, " or "))
	}
	if c.BatchRecords < 1 || c.BatchRecords > MaxBatchRecords {
		return fmt.Errorf("records per batch %d: want an integer in [1,%d]", c.BatchRecords, MaxBatchRecords)
	}
	return nil
}

// CleanupPolicy is every topic's cleanup.policy: history past retention
// is not dropped but replaced by a compacted prefix (the live rows of the
// earliest retained snapshot), so a reader from the log start still gets
// the whole table, as from a compacted Kafka topic whose old segments
// are deleted.
const CleanupPolicy = "compact,delete"

// LogRetention is how much of a topic's change history is kept, as
// Kafka's retention.ms and retention.bytes say it (-1: unbounded).
type LogRetention struct {
	Ms    int64
	Bytes int64
	// Own is true for lakegw's LSM tables, whose changelog lakegw keeps
	// past snapshot expiry for Ms/Bytes; false where the table's own
	// snapshot expiry bounds the log.
	Own bool
}

// LogRetention returns the retention of the topic of a table with the
// given (current) properties. lakegw's LSM tables keep their changelog
// for the topic's RetentionMs and RetentionBytes; a raw topic keeps every
// record; any other table's log
// reaches back as far as its snapshots do, which its writers' expiry
// (history.expire.max-snapshot-age-ms, when set) decides.
func (c TopicConfig) LogRetention(props iceberg.Properties) LogRetention {
	if changelog.IsLSMTable(props) {
		return LogRetention{Ms: c.RetentionMs, Bytes: c.RetentionBytes, Own: true}
	}
	if changelog.IsRawTable(props) {
		// Every produced record stays: snapshot expiry removes none
		// (they are read by offset from live files).
		return LogRetention{Ms: -1, Bytes: -1, Own: true}
	}
	r := LogRetention{Ms: -1, Bytes: -1}
	if v, ok := props[table.MaxSnapshotAgeMsKey]; ok {
		// A value Iceberg's own expiry could not read bounds nothing.
		if n, err := strconv.ParseInt(v, 10, 64); err == nil && n >= 0 {
			r.Ms = n
		}
	}
	return r
}

// DefaultRowGroupCacheBytes is the memory for decoded row groups where
// the operator does not say (Config.RowGroupCacheBytes).
const DefaultRowGroupCacheBytes = 64 << 20

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
	// ChangesCacheIdle drops a derived snapshot from memory once no fetch
	// read it for this long (0: never).
	ChangesCacheIdle time.Duration
	// RowGroupCacheBytes bounds the memory of row groups kept decoded
	// for the before-images of position deletes, across all topics (0:
	// DefaultRowGroupCacheBytes; negative: none).
	RowGroupCacheBytes int64
	// IndexDeriveMaxRecords is the largest append (by its summary's
	// added-records) a watcher derives to index it; a larger one is
	// counted from its manifests (0: DefaultIndexDeriveMaxRecords).
	IndexDeriveMaxRecords int64
	// StreamChunkRecords is how many records of such a large append a
	// fetch derives at a time, streaming the append rather than holding
	// it whole (0: DefaultStreamChunkRecords; negative: derived whole). It
	// is rounded up to whole batches.
	StreamChunkRecords int64
}

// ConfigProperty is the table property a topic config is read from, as
// DescribeConfigs reports where a config was set: "" for configs no
// property sets.
func ConfigProperty(config string) string {
	switch {
	case config == "compression.type":
		return PropCompression
	case config == "retention.ms":
		return changelog.PropRetentionMs
	case config == "retention.bytes":
		return changelog.PropRetentionBytes
	case strings.HasPrefix(config, "lakegw.") && config != ConfigPinnedBy:
		return config
	}
	return ""
}

// ConfigPinnedBy is a topic config lakegw reports, not a table property:
// the consumer groups whose committed offsets hold the table's history.
const ConfigPinnedBy = "lakegw.pinned-by"
