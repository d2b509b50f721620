package quickstart

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"sync"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/rs/zerolog"

	"github.com/lakegw/lakegw/maintain"
)

// DefaultTableName is the table the quickstart writes, as a dotted name.
const DefaultTableName = "demo.orders"

// DefaultTable returns the identifier of DefaultTableName.
func DefaultTable() table.Identifier { return table.Identifier{"demo", "orders"} }

// DemoOptions tunes the demo writer. Zero values take the defaults noted on
// each field.
type DemoOptions struct {
	// Table is the table to write; default DefaultTable() (demo.orders).
	Table table.Identifier
	// Seed makes every random choice reproducible: two demos with the same
	// seed, started on the same table history, commit the same rows.
	Seed uint64
	// Now supplies commit-time timestamps (created_at, updated_at); default
	// time.Now. Tests pass a fixed clock to get byte-identical snapshots.
	Now func() time.Time
	// InitialOrders is the size of the first snapshot of an empty table;
	// default 20.
	InitialOrders int
	// MinInsertsPerStep and MaxInsertsPerStep bound new orders per later
	// snapshot; defaults 3 and 8.
	MinInsertsPerStep int
	MaxInsertsPerStep int
	// MaxUpdatesPerStep bounds updated orders per later snapshot (at least
	// one is updated while any order is live); default 4.
	MaxUpdatesPerStep int
	// MaxDeletesPerStep bounds deleted orders per later snapshot; default 2.
	MaxDeletesPerStep int
}

func (o DemoOptions) withDefaults() DemoOptions {
	if len(o.Table) == 0 {
		o.Table = DefaultTable()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	setDefault(&o.InitialOrders, 20)
	setDefault(&o.MinInsertsPerStep, 3)
	setDefault(&o.MaxInsertsPerStep, 8)
	setDefault(&o.MaxUpdatesPerStep, 4)
	setDefault(&o.MaxDeletesPerStep, 2)
	o.MaxInsertsPerStep = max(o.MaxInsertsPerStep, o.MinInsertsPerStep)
	return o
}

func setDefault(v *int, def int) {
	if *v <= 0 {
		*v = def
	}
}

// Demo writes demo.orders: one snapshot per Step, each a realistic mix of
// inserts, updates and deletes committed merge-on-read (see Step).
//
// End-to-end tests use it as their table writer: Step commits a deterministic
// snapshot and returns its id, Expected is the in-memory oracle of the live
// rows, and LiveRows is the same oracle computed independently by an
// iceberg-go scan.
//
// A Demo is safe for concurrent use; Steps are serialised.
type Demo struct {
	cat  catalog.Catalog
	log  zerolog.Logger
	opts DemoOptions

	mu      sync.Mutex
	ensured bool
	model   *model

	// beforeCommit, when set, runs after the snapshot's files are written and
	// before the commit is sent. Tests use it to slip another writer's commit
	// in between.
	beforeCommit func(ctx context.Context) error
}

// NewDemo returns a demo writing through cat, which the caller opened and
// keeps ownership of.
func NewDemo(cat catalog.Catalog, log zerolog.Logger, opts DemoOptions) *Demo {
	return &Demo{cat: cat, log: log, opts: opts.withDefaults(), model: newModel()}
}

// Ensure creates the namespace and the table if they are absent, and loads
// the live rows of an existing table into memory so that later Steps update
// and delete rows that really exist. It returns the table as it is now.
func (d *Demo) Ensure(ctx context.Context) (*table.Table, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ensureLocked(ctx)
}

func (d *Demo) ensureLocked(ctx context.Context) (*table.Table, error) {
	tbl, err := ensureTable(ctx, d.cat, d.opts.Table)
	if err != nil {
		return nil, err
	}
	if err := d.syncLocked(ctx, tbl); err != nil {
		return nil, err
	}
	d.ensured = true
	return tbl, nil
}

// Expected returns the live orders as the demo believes them to be after its
// last Step: the oracle tests compare readers against. It does not read the
// table.
func (d *Demo) Expected() map[int64]Order {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.model.orders()
}

// LiveRows reads the current table with an iceberg-go scan (which applies the
// position deletes) and returns its rows by order_id. It is independent of
// the demo's memory, so tests use it to check both the demo and the gateway.
func (d *Demo) LiveRows(ctx context.Context) (map[int64]Order, error) {
	tbl, err := d.cat.LoadTable(ctx, d.opts.Table)
	if err != nil {
		return nil, fmt.Errorf("load %v: %w", d.opts.Table, err)
	}
	return scanOrders(ctx, tbl)
}

// Run commits a Step every interval until ctx is done, and returns nil then.
// The first Step comes after one interval: callers that want data at once
// (the quickstart does) call Step themselves before Run. A failed Step is
// logged and the next one tried: the quickstart must survive a transient
// catalog or disk error.
func (d *Demo) Run(ctx context.Context, every time.Duration) error {
	if every <= 0 {
		return fmt.Errorf("demo interval must be positive, got %v", every)
	}
	ticker := time.NewTicker(every)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
		if _, err := d.Step(ctx); err != nil && ctx.Err() == nil {
			d.log.Error().Err(err).Msg("demo step failed")
		}
	}
}

func ensureTable(ctx context.Context, cat catalog.Catalog, ident table.Identifier) (*table.Table, error) {
	ns := catalog.NamespaceFromIdent(ident)
	exists, err := cat.CheckNamespaceExists(ctx, ns)
	if err != nil {
		return nil, fmt.Errorf("check namespace %v: %w", ns, err)
	}
	if !exists {
		err := cat.CreateNamespace(ctx, ns, nil)
		if err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
			return nil, fmt.Errorf("create namespace %v: %w", ns, err)
		}
	}

	tbl, err := cat.LoadTable(ctx, ident)
	if errors.Is(err, catalog.ErrNoSuchTable) {
		tbl, err = cat.CreateTable(ctx, ident, OrdersSchema(), catalog.WithProperties(tableProperties()))
		if errors.Is(err, catalog.ErrTableAlreadyExists) {
			// Another process created it between our load and create.
			tbl, err = cat.LoadTable(ctx, ident)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("open %v: %w", ident, err)
	}
	// Position deletes are written against the unpartitioned spec (see
	// posdelete.go); a table someone partitioned is not ours to write.
	if !tbl.Spec().IsUnpartitioned() {
		return nil, fmt.Errorf("%v is partitioned; the demo writes only unpartitioned tables", ident)
	}
	return tbl, nil
}

// tableProperties declares the table format v2 and merge-on-read, so that
// other engines (Spark, Trino) writing to it would also write deletes
// instead of rewriting files. It also caps the metadata files and marks the
// table for lakegw's background maintenance: the demo commits every
// second, forever.
// demoSnapshotAge is how long the demo table keeps its snapshots.
const demoSnapshotAge = 10 * time.Minute

func tableProperties() iceberg.Properties {
	props := maintain.CreateProperties()
	maps.Copy(props, iceberg.Properties{
		"format-version":    "2",
		"write.delete.mode": "merge-on-read",
		"write.update.mode": "merge-on-read",
		"write.merge.mode":  "merge-on-read",
		// The demo commits every second: ten minutes of snapshots (600)
		// keep its metadata small and still give a consumer ten minutes
		// of history after the compacted prefix.
		table.MaxSnapshotAgeMsKey: strconv.FormatInt(demoSnapshotAge.Milliseconds(), 10),
	})
	return props
}
