package main

import (
	"context"
	"fmt"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/rs/zerolog"

	"github.com/lakegw/lakegw/changelog"
	"github.com/lakegw/lakegw/lake"
	"github.com/lakegw/lakegw/lsm"
	"github.com/lakegw/lakegw/maintain"
	"github.com/lakegw/lakegw/produce"
	"github.com/lakegw/lakegw/topics"
)

// cmdMaintain: lakegw maintain NS.TABLE [--dry-run] runs one maintenance
// pass and prints its report.
func cmdMaintain(ctx context.Context, args []string) error {
	c := newLsmCommand("maintain")
	dryRun := c.fs.Bool("dry-run", false, "report what the pass would do; commit and delete nothing")
	if err := c.parse(args, 1, "NS.TABLE"); err != nil {
		return err
	}
	ident, cat, log, err := openTableCatalog(ctx, c)
	if err != nil {
		return err
	}
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		return fmt.Errorf("load %s: %w", c.pos[0], err)
	}
	// No consumer pins here: the CLI does not open the gateway's state
	// store (a running serve holds it). Pins apply in serve's passes.
	rep, err := maintain.Run(ctx, cat, ident, maintain.Options{Log: log, DryRun: *dryRun, Retention: retentionFor(cat, tbl, log)})
	fmt.Print(rep)
	return err
}

// maintained reports whether serve maintains a table: lakegw's LSM tables,
// and every table marked with changelog.PropMaintenanceEnabled (the quickstart demo, or
// any table a user marks).
func maintained(tbl *table.Table) bool {
	props := tbl.Properties()
	return changelog.IsLSMTable(props) || props[changelog.PropMaintenanceEnabled] == "true"
}

// retentionFor is the changelog retention hook of a table: lakegw's LSM
// tables keep their topic's retention.ms of changes past snapshot expiry;
// other tables have none (nil).
func retentionFor(cat catalog.Catalog, tbl *table.Table, log zerolog.Logger) maintain.Retention {
	if !changelog.IsLSMTable(tbl.Properties()) {
		return nil
	}
	return lsm.NewRetention(cat, log)
}

// orphanEvery is how often the background loop looks for orphans.
const orphanEvery = time.Hour

// runMaintainer runs a maintenance pass on every served table lakegw
// maintains, every interval until ctx ends. pins (nil: none) says what
// consumers' committed offsets still need. The quickstart's writer holds
// its commits while its table is compacted (maintain.PropCompactionLease).
// mine reports whether this gateway maintains a table, by its topic name
// (among gateways sharing a state store, the leader of its partition 0).
func runMaintainer(ctx context.Context, cat catalog.Catalog, reg *topics.Registry, writes *produce.Service, every time.Duration, pins maintain.PinFunc, mine func(topic string) bool,
	log zerolog.Logger) error {
	tick := time.NewTicker(every)
	defer tick.Stop()
	// Orphan cleanup lists the table location and reads every manifest:
	// once an hour per table is plenty for files a day past their grace.
	// One entry per served table lakegw maintains.
	lastOrphans := map[string]time.Time{}
	// One cache for every table: manifest paths are unique across tables.
	manifests := maintain.NewManifestCache(maintain.DefaultManifestCacheBytes)
	// The files of expired snapshots of each table, held for their grace
	// (maintain.Options.Removals). One entry per served table lakegw
	// maintains; a table's files are removed through its own file IO.
	removals := map[string]*maintain.DeferredRemovals{}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		// Several topics may serve one table; it is maintained once.
		done := map[string]bool{}
		for _, t := range reg.Topics() {
			tbl := t.Table()
			key := lake.TopicName(t.Ident)
			if tbl == nil || done[key] || !maintained(tbl) || !mine(key) {
				continue
			}
			done[key] = true
			pin := tablePins(reg, t.Ident, pins)
			if changelog.IsRawTable(tbl.Properties()) {
				// A raw topic's records stay readable after expiry (they
				// are read by offset from live files): nothing to pin.
				pin = nil
			}
			held, ok := removals[key]
			if !ok {
				held = &maintain.DeferredRemovals{Grace: maintain.DefaultRemovalGrace}
				removals[key] = held
			}
			opts := maintain.Options{Log: log, Topic: t.Name, Pin: pin, Retention: retentionFor(cat, tbl, log),
				SkipOrphans: time.Since(lastOrphans[key]) < orphanEvery, Manifests: manifests, Removals: held,
				HoldWriters: func(_ context.Context, fn func() error) error { return writes.HoldCommits(t.Name, fn) }}
			rep, err := maintain.Run(ctx, cat, t.Ident, opts)
			if err != nil {
				if ctx.Err() == nil {
					log.Warn().Err(err).Str("table", key).Msg("maintenance pass failed; retrying at the next interval")
				}
				continue
			}
			if !opts.SkipOrphans {
				lastOrphans[key] = time.Now()
			}
			log.Debug().Str("table", key).Int("expired", rep.Expiry.Expired).Int("snapshots", rep.Expiry.SnapshotsBefore-rep.Expiry.Expired).
				Int("files_removed", rep.Expiry.FilesRemoved).Int("orphans_removed", rep.Orphans.Removed).Int("manifests", rep.Manifests.After).
				Dur("expiry_took", rep.Expiry.Took).Dur("compaction_took", rep.Compaction.Took).Dur("manifests_took", rep.Manifests.Took).
				Dur("orphans_took", rep.Orphans.Took).Msg("maintenance pass")
		}
		// A table no longer served or maintained leaves the maps: the
		// files it held are then orphan cleanup's.
		for key := range removals {
			if !done[key] {
				delete(removals, key)
			}
		}
		for key := range lastOrphans {
			if !done[key] {
				delete(lastOrphans, key)
			}
		}
	}
}

// tablePins is what the committed offsets of every topic serving ident
// still need (a table may be served as several topics): the oldest of
// their pins. nil pins nothing.
func tablePins(reg *topics.Registry, ident table.Identifier, pins maintain.PinFunc) maintain.PinFunc {
	if pins == nil {
		return nil
	}
	return func(ctx context.Context, _ string) (int64, bool) {
		oldest, any := int64(0), false
		for _, t := range reg.Topics() {
			if lake.TopicName(t.Ident) != lake.TopicName(ident) {
				continue
			}
			if ms, ok := pins(ctx, t.Name); ok && (!any || ms < oldest) {
				oldest, any = ms, true
			}
		}
		return oldest, any
	}
}
