package lsm

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/rs/zerolog"

	"github.com/lakegw/lakegw/changelog"
	"github.com/lakegw/lakegw/lake"
)

// Options configures an opened LSM table.
type Options struct {
	Log zerolog.Logger
	// CacheBytes bounds the decoded hot files kept for lookups (64 MiB).
	CacheBytes int64
	// Parallelism is how many buckets are prepared at once (GOMAXPROCS).
	Parallelism int
	// MaxCommitAttempts bounds the reload-and-redo loop of a commit that
	// conflicts with other writers (10).
	MaxCommitAttempts int
	// Compaction is the universal compaction configuration.
	Compaction CompactionOptions
	// AutoCompact runs compaction of the buckets that need it after every
	// successful commit, in the committing goroutine.
	AutoCompact bool
	// BeforeCommit, when set, runs after all files of a commit are written
	// and before the catalog commit; an error abandons the commit and
	// leaves the files behind, as a crashed writer would (tests).
	BeforeCommit func(ctx context.Context) error
}

func (o Options) withDefaults() Options {
	if o.CacheBytes <= 0 {
		o.CacheBytes = 64 << 20
	}
	if o.Parallelism <= 0 {
		o.Parallelism = runtime.GOMAXPROCS(0)
	}
	if o.MaxCommitAttempts <= 0 {
		o.MaxCommitAttempts = 10
	}
	o.Compaction = o.Compaction.withDefaults()
	return o
}

// Table is an opened lakegw LSM table. It is safe for concurrent use; each
// Writer is used by one goroutine.
type Table struct {
	cat   catalog.Catalog
	ident table.Identifier
	opts  Options
	log   zerolog.Logger
	cache *fileCache
}

// Open opens an existing LSM table of the catalog.
func Open(ctx context.Context, cat catalog.Catalog, ident table.Identifier, opts Options) (*Table, error) {
	opts = opts.withDefaults()
	t := &Table{cat: cat, ident: slices.Clone(ident), opts: opts, cache: newFileCache(opts.CacheBytes),
		log: opts.Log.With().Str("table", strings.Join(ident, ".")).Logger()}
	if _, _, err := t.load(ctx); err != nil {
		return nil, err
	}
	return t, nil
}

// Name is "<namespace>.<table>".
func (t *Table) Name() string { return strings.Join(t.ident, ".") }

// load reads the table's current metadata and layout.
func (t *Table) load(ctx context.Context) (*table.Table, *spec, error) {
	tbl, err := t.cat.LoadTable(ctx, t.ident)
	if err != nil {
		return nil, nil, fmt.Errorf("load %s: %w", t.Name(), err)
	}
	return t.withSpec(tbl)
}

// loadUnleased is load once no compaction holds the table's writers
// (lake.PropCompactionLease): a writer's upserts delete rows in the runs a
// compaction merges, so its commits during the merge would make the
// compaction start over, at every commit.
func (t *Table) loadUnleased(ctx context.Context) (*table.Table, *spec, error) {
	tbl, err := lake.LoadUnleased(ctx, t.cat, t.ident)
	if err != nil {
		return nil, nil, err
	}
	return t.withSpec(tbl)
}

func (t *Table) withSpec(tbl *table.Table) (*table.Table, *spec, error) {
	sp, err := parseSpec(tbl.Schema(), tbl.Properties())
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", t.Name(), err)
	}
	sp.hashNames = changelog.StableKeyNames(tbl.Metadata().Schemas(), sp.keyIDs)
	return tbl, sp, nil
}

// CreateOptions describes a new LSM table.
type CreateOptions struct {
	// PrimaryKey names the key columns (made required identifier fields).
	PrimaryKey []string
	// Buckets is the number of buckets = topic partitions.
	Buckets int
	// MergeEngine: deduplicate (default), partial-update, aggregation,
	// first-row.
	MergeEngine string
	// Aggregates maps columns to aggregate functions (aggregation).
	Aggregates map[string]string
	// SequenceGroups maps a sequence column to the columns it guards
	// (partial-update).
	SequenceGroups map[string][]string
	// FormatVersion is the Iceberg format version: 2 (default; replaced
	// rows are deleted by position delete files) or 3 (by deletion
	// vectors, at most one per data file).
	FormatVersion int
	// Properties are further table properties.
	Properties iceberg.Properties
}

// Create creates an LSM table: an unpartitioned Iceberg v2 or v3 table whose
// identifier fields are the primary key, with the lakegw.lsm.* properties.
func Create(ctx context.Context, cat catalog.Catalog, ident table.Identifier, schema *iceberg.Schema, co CreateOptions, opts Options) (*Table, error) {
	if len(co.PrimaryKey) == 0 {
		return nil, errors.New("create LSM table: no primary key")
	}
	if co.Buckets < 1 {
		return nil, fmt.Errorf("create LSM table: %d buckets", co.Buckets)
	}
	fields := schema.Fields()
	var keyIDs []int
	for _, name := range co.PrimaryKey {
		i := slices.IndexFunc(fields, func(f iceberg.NestedField) bool { return f.Name == name })
		if i < 0 {
			return nil, fmt.Errorf("create LSM table: primary key column %q is not in the schema", name)
		}
		fields[i].Required = true
		keyIDs = append(keyIDs, fields[i].ID)
	}
	sc := iceberg.NewSchemaWithIdentifiers(0, keyIDs, fields...)
	version := co.FormatVersion
	if version == 0 {
		version = 2
	}
	if version != 2 && version != 3 {
		return nil, fmt.Errorf("create LSM table: format version %d (2 or 3)", version)
	}
	engine := co.MergeEngine
	if engine == "" {
		engine = EngineDeduplicate
	}
	props := iceberg.Properties{
		"format-version": strconv.Itoa(version),
		PropLSM:          "true",
		PropBuckets:      strconv.Itoa(co.Buckets),
		PropPartitions:   strconv.Itoa(co.Buckets),
		PropMergeEngine:  engine,
		// A streaming table commits every few seconds: cap its metadata
		// files and let serve maintain it (maintain.CreateProperties;
		// lsm/ must not import maintain/).
		table.MetadataDeleteAfterCommitEnabledKey: "true",
		table.MetadataPreviousVersionsMaxKey:      "10",
		changelog.PropMaintenanceEnabled:          "true",
	}
	for col, f := range co.Aggregates {
		props[PropAggPrefix+col] = f
	}
	for col, cols := range co.SequenceGroups {
		props[PropSeqGroupPrefix+col] = strings.Join(cols, ",")
	}
	maps.Copy(props, co.Properties)
	// Check before creating: a table that cannot be opened is not created.
	if _, err := parseSpec(sc, props); err != nil {
		return nil, fmt.Errorf("create LSM table %s: %w", strings.Join(ident, "."), err)
	}
	if _, err := cat.CreateTable(ctx, ident, sc, catalog.WithProperties(props)); err != nil {
		return nil, fmt.Errorf("create table %s: %w", strings.Join(ident, "."), err)
	}
	return Open(ctx, cat, ident, opts)
}
