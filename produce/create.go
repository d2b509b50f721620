package produce

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/changelog"
	"github.com/lakegw/lakegw/lake"
	"github.com/lakegw/lakegw/lsm"
	"github.com/lakegw/lakegw/maintain"
)

// MaxPartitions bounds a raw topic's partitions.
const MaxPartitions = 10000

// RawSnapshotRetention is how long the table of a raw or append table topic
// keeps snapshots: its records are read by offset or as the rows of live
// files, and every commit carries the state of every producer seen in the
// last carryWindow, so the newest snapshot is all a restart needs. Short,
// because every commit (twenty a second) rewrites the metadata of every
// snapshot kept.
const RawSnapshotRetention = 30 * time.Second

// RawSnapshotsKept is the most snapshots a raw topic's table keeps: each
// commit expires the older ones itself (maintain.HistoryCap), so the cost of
// a commit stays the same however often producers make it commit. 64 is three
// seconds of history at the default commit interval.
const RawSnapshotsKept = 64

// writerMaintainedProps keep what a table committed to twenty times a second
// accumulates bounded by its writer's own commits, not only by the next
// maintenance pass: each commit deletes the metadata files that fall out of
// a short log, and merges the manifests once there are 100
// (commit.manifest-merge.min-count-to-merge), where a pass would have to
// hold the writer while it merges hundreds.
var writerMaintainedProps = func() iceberg.Properties {
	props := maintain.CappedMetadataProperties()
	props[table.ManifestMergeEnabledKey] = "true"
	return props
}()

// rawWriteProps are the Parquet settings of a raw topic's data files,
// chosen for a writer that encodes every produced record within the
// commit its producer waits for. Offsets, keys and values are almost
// always distinct, so a dictionary for them costs a hash of every value
// only to be abandoned (14 % of the gateway's CPU in a produce profile,
// zstd level 3 another 22 %); with zstd level 1 and these dictionaries off
// a commit took a quarter less time (BenchmarkRawCommit) and the files
// were no larger per produced byte (0.052 vs 0.057). Compaction rewrites the files with the same
// settings; a user may change them (ALTER TABLE ... SET TBLPROPERTIES).
var rawWriteProps = iceberg.Properties{
	table.ParquetCompressionKey:                       "zstd",
	table.ParquetCompressionLevelKey:                  "1",
	dictionaryEncodingProp(changelog.RawOffsetColumn): "false",
	dictionaryEncodingProp(changelog.RawKeyColumn):    "false",
	dictionaryEncodingProp(changelog.RawValueColumn):  "false",
}

// dictionaryEncodingProp is the table property that turns column's
// dictionary encoding on or off (iceberg-go reads it; it does not export
// the name).
func dictionaryEncodingProp(column string) string {
	return "write.parquet.dict-encoding-enabled.column." + column
}

// manifestCacheBytes bounds what the writers of raw topics cache of their
// tables' manifests (read only when a commit expires a compaction's
// snapshots).
const manifestCacheBytes = 16 << 20

// legalTopic is Kafka's rule for topic names.
var legalTopic = regexp.MustCompile(`^[a-zA-Z0-9._-]{1,249}$`)

// CreateRawTopic creates the table of a raw topic with the given number of
// partitions (validateOnly: only checks that it could). configs are Kafka
// topic configs; the ones that apply become table properties
// (retention.ms and friends are read from them as for any topic), others
// are refused.
func (s *Service) CreateRawTopic(ctx context.Context, topic string, partitions int32, configs map[string]string, validateOnly bool) error {
	ident, err := newTopicIdent(topic, partitions)
	if err != nil {
		return err
	}
	props := iceberg.Properties{
		changelog.PropRaw:        "true",
		changelog.PropPartitions: strconv.Itoa(int(partitions)),
		// Maintained by the gateway (expiry, manifests, orphans): it
		// commits every few hundred milliseconds.
		changelog.PropMaintenanceEnabled: "true",
		// A raw topic reads its records by offset from live files, never
		// from a snapshot (RawSnapshotRetention).
		table.MaxSnapshotAgeMsKey:   strconv.FormatInt(RawSnapshotRetention.Milliseconds(), 10),
		table.PropertyFormatVersion: "2",
	}
	maps.Copy(props, writerMaintainedProps)
	maps.Copy(props, rawWriteProps)
	for k, v := range configs {
		switch {
		case k == "retention.ms" || k == "retention.bytes":
			// Kafka's default for a topic that keeps everything: the
			// only value a raw topic honours today.
			if v != "-1" {
				return fmt.Errorf("%w: %s=%s: a raw topic keeps every record (retention -1); deleting old records is not supported yet", ErrInvalidConfig, k, v)
			}
		case k == ConfigCommitInterval:
			props[k] = v
		default:
			return fmt.Errorf("%w: config %q does not apply to a raw topic (accepted: %s; retention.ms and retention.bytes -1)", ErrInvalidConfig, k, ConfigCommitInterval)
		}
	}
	spec := changelog.RawPartitionSpec()
	return s.createTable(ctx, topic, ident, changelog.RawSchema(), props, validateOnly, catalog.WithPartitionSpec(&spec))
}

// CheckTopicName says whether topic is a legal Kafka topic name (Kafka's
// Topic.validate): an ErrInvalidTopic when not.
func CheckTopicName(topic string) error {
	if !legalTopic.MatchString(topic) || topic == "." || topic == ".." {
		return fmt.Errorf("%w: %q: a topic name is 1 to 249 of [a-zA-Z0-9._-]", ErrInvalidTopic, topic)
	}
	return nil
}

// newTopicIdent checks a new topic's name and partition count (Kafka's
// rules) and returns its table.
func newTopicIdent(topic string, partitions int32) (table.Identifier, error) {
	if err := CheckTopicName(topic); err != nil {
		return nil, err
	}
	if partitions < 1 || partitions > MaxPartitions {
		return nil, fmt.Errorf("%w: %d partitions: want 1 to %d", ErrInvalidPartitions, partitions, MaxPartitions)
	}
	ident, err := lake.TopicIdent(topic)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidTopic, err)
	}
	return ident, nil
}

// kafkaRetention maps Kafka's retention configs to the table properties a
// table topic keeps them in.
var kafkaRetention = map[string]string{"retention.ms": changelog.PropRetentionMs, "retention.bytes": changelog.PropRetentionBytes}

// rawPartitions is a raw topic's partition count.
func rawPartitions(tbl *table.Table) (int32, error) {
	v := tbl.Properties()[changelog.PropPartitions]
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > MaxPartitions {
		return 0, fmt.Errorf("raw topic table %s: %s=%q: want 1 to %d", lake.TopicName(tbl.Identifier()), changelog.PropPartitions, v, MaxPartitions)
	}
	return int32(n), nil
}

// Kafka topic configs that make a table topic (CreateTableTopic).
const (
	ConfigSchema      = "lakegw.schema"
	ConfigPrimaryKey  = "lakegw.primary-key"
	ConfigMergeEngine = "lakegw.merge-engine"
	// ConfigFormatVersion is the table's Iceberg format version (2 or 3).
	ConfigFormatVersion = "lakegw.format-version"
)

// CreateTableTopic creates a table topic: a lakegw primary-key table
// (lsm.Create) with the schema and key the configs give, one bucket per
// partition. Its records are written and read in lakegw.format (the
// gateway's default when unset).
func (s *Service) CreateTableTopic(ctx context.Context, topic string, partitions int32, configs map[string]string, validateOnly bool) error {
	ident, err := newTopicIdent(topic, partitions)
	if err != nil {
		return err
	}
	if configs[ConfigSchema] == "" {
		return fmt.Errorf("%w: a table topic needs %s ('id long, name string, ...'), and %s for a primary-key table", ErrInvalidConfig, ConfigSchema, ConfigPrimaryKey)
	}
	schema, err := lsm.ParseSchema(configs[ConfigSchema])
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrInvalidConfig, ConfigSchema, err)
	}
	if configs[ConfigPrimaryKey] == "" {
		return s.createAppendTopic(ctx, topic, ident, partitions, schema, configs, validateOnly)
	}
	co := lsm.CreateOptions{Buckets: int(partitions), MergeEngine: configs[ConfigMergeEngine], Properties: iceberg.Properties{}}
	for _, k := range strings.Split(configs[ConfigPrimaryKey], ",") {
		co.PrimaryKey = append(co.PrimaryKey, strings.TrimSpace(k))
	}
	if v := configs[ConfigFormatVersion]; v != "" {
		if co.FormatVersion, err = strconv.Atoi(v); err != nil {
			return fmt.Errorf("%w: %s=%q", ErrInvalidConfig, ConfigFormatVersion, v)
		}
	}
	for k, v := range configs {
		switch {
		case k == ConfigSchema || k == ConfigPrimaryKey || k == ConfigMergeEngine || k == ConfigFormatVersion:
		case k == ConfigAutoEvolve:
			if v != "true" && v != "false" {
				return fmt.Errorf("%w: %s=%q: want true or false", ErrInvalidConfig, k, v)
			}
			co.Properties[k] = v
		case k == changelog.PropFormat:
			if _, err := changelog.FormatByName(v); err != nil || v == changelog.RawFormat {
				return fmt.Errorf("%w: %s=%q: want upsert, debezium-json, canal-json or json", ErrInvalidConfig, k, v)
			}
			co.Properties[k] = v
		case k == ConfigCommitInterval:
			co.Properties[k] = v
		case kafkaRetention[k] != "":
			// A table topic keeps its changelog for the topic's
			// retention, past snapshot expiry.
			co.Properties[kafkaRetention[k]] = v
		default:
			return fmt.Errorf("%w: config %q does not apply to a table topic", ErrInvalidConfig, k)
		}
	}
	if _, err := commitIntervalOf(co.Properties, 0); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if validateOnly {
		if _, err := s.cat.LoadTable(ctx, ident); err == nil {
			return fmt.Errorf("%w: %s", ErrTopicExists, topic)
		}
		return nil
	}
	ns := catalog.NamespaceFromIdent(ident)
	if err := s.cat.CreateNamespace(ctx, ns, nil); err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
		return fmt.Errorf("create namespace %v: %w", ns, err)
	}
	if _, err := s.cat.LoadTable(ctx, ident); err == nil {
		return fmt.Errorf("%w: %s", ErrTopicExists, topic)
	}
	if _, err := lsm.Create(ctx, s.cat, ident, schema, co, lsm.Options{Log: s.cfg.Log}); err != nil {
		if errors.Is(err, catalog.ErrTableAlreadyExists) {
			return fmt.Errorf("%w: %s", ErrTopicExists, topic)
		}
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	return nil
}

// DeleteTopic drops the table of a topic lakegw writes (a raw or table
// topic) from the catalog, after stopping its writer; a table other
// engines write is refused (ErrReadOnly): lakegw never drops it. The data
// files stay where they are, for the catalog's or an operator's purge.
func (s *Service) DeleteTopic(ctx context.Context, topic string) error {
	ident, err := lake.TopicIdent(topic)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnknownTopic, err)
	}
	tbl, err := s.cat.LoadTable(ctx, ident)
	if errors.Is(err, catalog.ErrNoSuchTable) {
		return fmt.Errorf("%w: %s", ErrUnknownTopic, topic)
	}
	if err != nil {
		return fmt.Errorf("load %s: %w", topic, err)
	}
	if props := tbl.Properties(); !changelog.IsRawTable(props) && !changelog.IsLSMTable(props) && !changelog.IsAppendTable(props) {
		return fmt.Errorf("%w: %s is a table lakegw does not write; drop it with the engine that owns it", ErrReadOnly, topic)
	}
	s.stopWriter(topic)
	if err := s.cat.DropTable(ctx, ident); err != nil {
		return fmt.Errorf("drop table %s: %w", lake.TopicName(ident), err)
	}
	return nil
}

// AddPartitions raises a raw topic's partition count to partitions
// (CreatePartitions): records stay where they were produced, new ones may
// go to the new partitions. A table topic's partitions are its buckets,
// fixed at creation.
func (s *Service) AddPartitions(ctx context.Context, topic string, partitions int32, validateOnly bool) error {
	ident, err := lake.TopicIdent(topic)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnknownTopic, err)
	}
	for attempt := 1; ; attempt++ {
		tbl, err := s.cat.LoadTable(ctx, ident)
		if errors.Is(err, catalog.ErrNoSuchTable) {
			return fmt.Errorf("%w: %s", ErrUnknownTopic, topic)
		}
		if err != nil {
			return fmt.Errorf("load %s: %w", topic, err)
		}
		props := tbl.Properties()
		switch {
		case changelog.IsLSMTable(props):
			return fmt.Errorf("%w: a table topic's partitions are its table's buckets, fixed when it was created", ErrInvalidPartitions)
		case changelog.IsAppendTable(props):
			return fmt.Errorf("%w: an append table topic has one partition", ErrInvalidPartitions)
		case !changelog.IsRawTable(props):
			return fmt.Errorf("%w: %s serves a table lakegw does not write; its partitions are the table property %s", ErrReadOnly, topic, changelog.PropPartitions)
		}
		now, err := rawPartitions(tbl)
		if err != nil {
			return err
		}
		if partitions <= now || partitions > MaxPartitions {
			return fmt.Errorf("%w: %s has %d partitions; it can grow to %d at most, not to %d", ErrInvalidPartitions, topic, now, MaxPartitions, partitions)
		}
		if validateOnly {
			return nil
		}
		tx := tbl.NewTransaction()
		if err := tx.SetProperties(iceberg.Properties{changelog.PropPartitions: strconv.Itoa(int(partitions))}); err != nil {
			return err
		}
		_, err = lake.CommitOrClean(ctx, tbl, tx)
		if err == nil {
			// The writer picks up the new count when it starts again.
			s.stopWriter(topic)
			return nil
		}
		if !lake.IsCommitConflict(err) || attempt >= maxCommitAttempts {
			return fmt.Errorf("set the partitions of %s: %w", topic, err)
		}
	}
}

// createAppendTopic creates an append table topic: an unpartitioned
// Iceberg v2 table of schema that producers append rows to (json, or the
// inserts of debezium-json and canal-json), one partition.
func (s *Service) createAppendTopic(ctx context.Context, topic string, ident table.Identifier, partitions int32, schema *iceberg.Schema,
	configs map[string]string, validateOnly bool) error {
	if partitions != 1 {
		return fmt.Errorf("%w: an append table topic has one partition (its rows' order is its offsets'), not %d", ErrInvalidPartitions, partitions)
	}
	props := iceberg.Properties{
		changelog.PropAppend:             "true",
		changelog.PropPartitions:         "1",
		changelog.PropFormat:             "json",
		changelog.PropMaintenanceEnabled: "true",
		table.MaxSnapshotAgeMsKey:        strconv.FormatInt(RawSnapshotRetention.Milliseconds(), 10),
		table.ParquetCompressionKey:      "zstd",
		table.PropertyFormatVersion:      "2",
	}
	maps.Copy(props, writerMaintainedProps)
	for k, v := range configs {
		switch k {
		case ConfigSchema:
		case changelog.PropFormat:
			if _, err := changelog.FormatByName(v); err != nil || v == changelog.RawFormat {
				return fmt.Errorf("%w: %s=%q: want upsert, debezium-json, canal-json or json", ErrInvalidConfig, k, v)
			}
			props[k] = v
		case ConfigCommitInterval:
			props[k] = v
		case ConfigAutoEvolve:
			if v != "true" && v != "false" {
				return fmt.Errorf("%w: %s=%q: want true or false", ErrInvalidConfig, k, v)
			}
			props[k] = v
		default:
			return fmt.Errorf("%w: config %q does not apply to an append table topic", ErrInvalidConfig, k)
		}
	}
	return s.createTable(ctx, topic, ident, schema, props, validateOnly)
}

// createTable creates a produced topic's table with props (the topic's
// commit interval checked first), or with validateOnly says whether it
// could.
func (s *Service) createTable(ctx context.Context, topic string, ident table.Identifier, schema *iceberg.Schema, props iceberg.Properties,
	validateOnly bool, opts ...catalog.CreateTableOpt) error {
	if _, err := commitIntervalOf(props, 0); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if validateOnly {
		if _, err := s.cat.LoadTable(ctx, ident); err == nil {
			return fmt.Errorf("%w: %s", ErrTopicExists, topic)
		}
		return nil
	}
	ns := catalog.NamespaceFromIdent(ident)
	if err := s.cat.CreateNamespace(ctx, ns, nil); err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
		return fmt.Errorf("create namespace %v: %w", ns, err)
	}
	_, err := s.cat.CreateTable(ctx, ident, schema, append(opts, catalog.WithProperties(props))...)
	if errors.Is(err, catalog.ErrTableAlreadyExists) {
		return fmt.Errorf("%w: %s", ErrTopicExists, topic)
	}
	if err != nil {
		return fmt.Errorf("create table %s: %w", lake.TopicName(ident), err)
	}
	return nil
}
