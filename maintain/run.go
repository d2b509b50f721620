package maintain

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/rs/zerolog"
)

// pass is one Run: the table and the options it runs with.
type pass struct {
	cat   catalog.Catalog
	ident table.Identifier
	name  string
	opts  Options
	log   zerolog.Logger
}

// Run runs one maintenance pass of the table, in this order: cap the
// metadata files (the table properties, once), expire snapshots (and
// remove the files only they referenced), compact small data files of a
// merge-on-read table, merge the current snapshot's manifests, remove
// orphans past the grace period (unless SkipOrphans), and remove the
// metadata files of lost commits. Each step commits on its own, so a
// failure leaves the steps before it done; the report says what happened
// up to the error.
func Run(ctx context.Context, cat catalog.Catalog, ident table.Identifier, opts Options) (Report, error) {
	opts = opts.withDefaults(ident)
	p := &pass{cat: cat, ident: ident, name: dotted(ident), opts: opts,
		log: opts.Log.With().Str("table", dotted(ident)).Logger()}
	rep := Report{Table: p.name, DryRun: opts.DryRun}

	if err := p.capMetadata(ctx, &rep); err != nil {
		return rep, err
	}
	// Expiry first: it is what bounds the metadata every commit rewrites,
	// and the steps after it may lose every race with a fast writer.
	// Each step's wall time is reported: a pass that outgrows its interval
	// is how expiry falls behind a fast writer, and the log says which step.
	if err := timed(&rep.Expiry.Took, func() error { return p.expire(ctx, &rep.Expiry) }); err != nil {
		return rep, err
	}
	if err := timed(&rep.Compaction.Took, func() error { return p.compact(ctx, &rep.Compaction) }); err != nil {
		return rep, err
	}
	if err := timed(&rep.Manifests.Took, func() error { return p.mergeManifests(ctx, &rep.Manifests) }); err != nil {
		return rep, err
	}
	if !opts.SkipOrphans {
		if err := timed(&rep.Orphans.Took, func() error { return p.removeOrphans(ctx, &rep.Orphans) }); err != nil {
			return rep, err
		}
	}
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		return rep, fmt.Errorf("load %s after maintenance: %w", p.name, err)
	}
	// Every pass, not only with the hourly orphan cleanup: on a streaming
	// table with racing committers, lost commits leave a metadata file the
	// size of the whole metadata every few seconds, and listing metadata/
	// is cheap.
	if !opts.DryRun {
		if rep.LostCommits, err = removeLostCommits(ctx, tbl); err != nil {
			return rep, fmt.Errorf("%s: metadata files of lost commits: %w", p.name, err)
		}
		if rep.LostCommits > 0 {
			p.log.Debug().Int("removed", rep.LostCommits).Msg("removed metadata files of lost commits")
		}
	}
	rep.MetadataFiles = countMetadataFiles(tbl)
	p.log.Debug().Interface("report", rep).Msg("maintenance pass")
	return rep, nil
}

// timed runs step and stores its wall time in took, also when it fails.
func timed(took *time.Duration, step func() error) error {
	start := time.Now()
	err := step()
	*took = time.Since(start)
	return err
}

func countMetadataFiles(tbl *table.Table) int {
	n := 1
	for range tbl.Metadata().PreviousFiles() {
		n++
	}
	return n
}

func dotted(ident table.Identifier) string { return strings.Join(ident, ".") }
