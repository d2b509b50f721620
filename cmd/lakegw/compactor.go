package main

import (
	"context"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/rs/zerolog"

	"github.com/lakegw/lakegw/changelog"
	"github.com/lakegw/lakegw/lsm"
	"github.com/lakegw/lakegw/topics"
)

// runCompactor runs universal compaction on the served lakegw LSM tables
// every interval until ctx ends, so that their sorted runs stay few (and
// lookups cheap) even when writers do not compact. Compaction commits
// replace snapshots, which change no rows and so no topic offsets.
// mine reports whether this gateway compacts a topic's table (among
// gateways sharing a state store, the leader of its partition 0 does).
func runCompactor(ctx context.Context, cat catalog.Catalog, reg *topics.Registry, every time.Duration, mine func(topic string) bool, log zerolog.Logger) error {
	tick := time.NewTicker(every)
	defer tick.Stop()
	opened := map[string]*lsm.Table{}
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		// Only the tables served now stay open: a dropped table's
		// decoded runs are released with it.
		served := map[string]*lsm.Table{}
		for _, t := range reg.Topics() {
			tbl := t.Table()
			if tbl == nil || !changelog.IsLSMTable(tbl.Properties()) || !mine(t.Name) {
				continue
			}
			lt, ok := opened[t.Name]
			if !ok {
				var err error
				if lt, err = lsm.Open(ctx, cat, t.Ident, lsm.Options{Log: log}); err != nil {
					log.Warn().Err(err).Str("table", t.Name).Msg("cannot open LSM table for compaction")
					continue
				}
			}
			served[t.Name] = lt
			res, err := lt.Compact(ctx, false)
			if err != nil {
				if ctx.Err() == nil {
					log.Warn().Err(err).Str("table", t.Name).Msg("background compaction failed; retrying at the next interval")
				}
				continue
			}
			log.Debug().Str("table", t.Name).Interface("result", res).Msg("background compaction")
		}
		opened = served
	}
}
