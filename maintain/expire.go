package maintain

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/changelog"
	"github.com/lakegw/lakegw/lake"
)

// pinSlack covers the time between the pass reading the clock and
// iceberg-go's ExpireSnapshots reading its own (microseconds apart in one
// stage call): a pinned snapshot must not fall out in between.
const pinSlack = time.Second

// expire expires snapshots by age and count (the table's
// history.expire.* properties, lakegw's defaults otherwise), holding what
// consumers pin, and removes the files that only expired snapshots
// referenced. The Retention hook sees the transaction before and after the
// expiry and the committed table.
func (p *pass) expire(ctx context.Context, rep *ExpiryReport) error {
	// On an LSM table with a Retention hook a pin holds the changelog (its
	// checkpoints), not snapshots: a consumer stopped for a day then costs
	// a changelog log entry per snapshot instead of a day of snapshots in
	// the metadata file every commit rewrites.
	var changelogPin *PinReport
	if p.opts.Retention != nil && !p.opts.DryRun {
		var err error
		if changelogPin, err = p.beforeExpire(ctx); err != nil {
			return err
		}
	}
	var (
		expired []table.Snapshot
		pinned  pinnedChange
		written []string
	)
	base, committed, err := p.commitStepWith(ctx, "snapshot expiry", func(ctx context.Context, tbl *table.Table, tx *table.Transaction) (bool, error) {
		now := time.Now()
		ret, err := retentionOf(tbl.Properties(), p.opts)
		if err != nil {
			return false, err
		}
		*rep = ExpiryReport{SnapshotsBefore: len(tbl.Metadata().Snapshots()), MinSnapshots: ret.minSnapshots}
		var holdFromMs int64
		logsPins := p.logsPins(tbl)
		switch {
		case changelogPin != nil:
			rep.MaxAge, rep.Pin = ret.maxAge, *changelogPin
		case logsPins:
			rep.MaxAge = ret.maxAge
			rep.Pin, holdFromMs = p.snapshotHold(ctx, ret, now)
		default:
			rep.MaxAge, rep.Pin, err = p.pinnedAge(ctx, ret, now, tbl.Metadata())
			if err != nil {
				return false, err
			}
		}
		if err := tx.ExpireSnapshots(table.WithOlderThan(rep.MaxAge), table.WithRetainLast(ret.minSnapshots),
			table.WithPostCommit(false)); err != nil {
			return false, fmt.Errorf("expire snapshots: %w", err)
		}
		staged, err := tx.StagedTable()
		if err != nil {
			return false, fmt.Errorf("staged table: %w", err)
		}
		expired = expiredSnapshots(tbl, staged.Table)
		rep.Expired = len(expired)
		pinned = pinnedChange{}
		if logsPins || tbl.Properties()[changelog.PropPinnedLog] != "" {
			// A table whose pins are no longer logged (made an LSM table,
			// or maintained without pins) lets its log go.
			var capped bool
			if pinned, capped, err = nextPinnedLog(ctx, tbl, staged.Metadata(), expired, holdFromMs, ret.maxPinSnapshots); err != nil {
				return false, err
			}
			if capped && rep.Pin.CappedBy == "" {
				rep.Pin.CappedBy = changelog.PropMaxPinSnapshots
			}
			rep.Logged = pinned.next.Len()
			if pinned.changed() {
				ev := p.log.Debug().Int64("hold_from_ms", holdFromMs).Int("logged_before", pinned.old.Len()).Int("logged", pinned.next.Len())
				if pinned.next.Len() > 0 {
					ev = ev.Int64("first_logged_sequence_number", pinned.next.Snapshots[0].SequenceNumber)
				}
				ev.Msg("pinned log moves")
			}
		}
		if len(expired) == 0 && !pinned.changed() {
			return false, nil
		}
		if p.opts.Retention != nil && !p.opts.DryRun {
			if err := p.opts.Retention.AfterExpire(ctx, tbl, tx, expired); err != nil {
				return false, fmt.Errorf("retention hook after expiry: %w", err)
			}
		}
		if p.opts.DryRun {
			// What would be removed, from the staged metadata.
			files, err := unreferencedFiles(ctx, p.opts.Manifests, tbl, staged.Table, pinned.logged(), pinned.goneOf(expired))
			rep.FilesRemoved = len(files)
			return true, err
		}
		if err := pinned.stage(ctx, tbl, tx); err != nil {
			return false, err
		}
		if pinned.nextPath != "" {
			written = append(written, pinned.nextPath)
		}
		return true, nil
	}, p.commitUnpinned)
	if committed != nil {
		// A log written by an attempt that lost its race names nothing.
		written = slices.DeleteFunc(written, func(f string) bool { return f == committed.Properties()[changelog.PropPinnedLog] })
	}
	if len(written) > 0 && base != nil {
		if _, rmErr := lake.RemoveFiles(ctx, base, written); rmErr != nil {
			p.log.Warn().Err(rmErr).Msg("cannot remove pinned logs no commit named; orphan cleanup will")
		}
	}
	if err != nil || committed == nil {
		if err == nil && base != nil && !p.opts.DryRun {
			// Nothing expired: the files held by earlier passes whose
			// grace ran out still go.
			rep.FilesRemoved, err = p.removeExpiredFiles(ctx, base, nil)
		}
		return err
	}
	p.log.Info().Int("expired", len(expired)).Int("retained", len(committed.Metadata().Snapshots())).Int("logged", rep.Logged).
		Dur("max_age", rep.MaxAge).Bool("pinned", rep.Pin.Pinned).Msg("expired snapshots")
	if p.opts.Retention != nil {
		if err := p.opts.Retention.Committed(ctx, committed); err != nil {
			return fmt.Errorf("retention hook after expiry commit of %s: %w", p.name, err)
		}
	}
	files, err := unreferencedFiles(ctx, p.opts.Manifests, base, committed, pinned.logged(), pinned.goneOf(expired))
	if err != nil {
		return fmt.Errorf("files of expired snapshots of %s: %w", p.name, err)
	}
	if pinned.changed() && pinned.oldPath != "" {
		files = append(files, pinned.oldPath)
	}
	rep.FilesRemoved, err = p.removeExpiredFiles(ctx, committed, files)
	return err
}

// removeExpiredFiles removes the files expired snapshots alone referenced,
// now or after the grace of p.opts.Removals, returning how many it removed.
func (p *pass) removeExpiredFiles(ctx context.Context, tbl *table.Table, files []string) (int, error) {
	n, err := p.opts.Removals.remove(ctx, tbl, files)
	if err != nil {
		return n, fmt.Errorf("remove files of expired snapshots of %s: %w", p.name, err)
	}
	return n, nil
}

// beforeExpire runs the Retention hook's BeforeExpire on the table as it
// is now. The hook commits on its own (checkpoint tags), so a writer
// committing meanwhile makes it conflict: it runs again on the new table
// state, as many times as a step's commit is tried. A pass that failed
// here would expire nothing, and a busy table's expiry would fall behind.
func (p *pass) beforeExpire(ctx context.Context) (*PinReport, error) {
	const what = "retention hook before expiry"
	var changelogPin *PinReport
	err := p.retryConflicts(what, func() error {
		tbl, err := p.cat.LoadTable(ctx, p.ident)
		if err != nil {
			return fmt.Errorf("%s: load %s: %w", what, p.name, err)
		}
		now := time.Now()
		changelogPin = nil
		var holdFromMs int64
		if changelog.IsLSMTable(tbl.Properties()) {
			ret, err := retentionOf(tbl.Properties(), p.opts)
			if err != nil {
				return fmt.Errorf("%s of %s: %w", what, p.name, err)
			}
			pin, hold := p.changelogHold(ctx, ret, now)
			changelogPin, holdFromMs = &pin, hold
		}
		if err := p.opts.Retention.BeforeExpire(ctx, tbl, now, holdFromMs); err != nil {
			return fmt.Errorf("%s of %s: %w", what, p.name, err)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return changelogPin, nil
}

// pinnedAge is the snapshot age to keep: the table's own, stretched back to
// the oldest snapshot a committed group offset still needs, but never past
// lakegw.consumer.max-pin, nor past the newest
// lakegw.consumer.max-pin-snapshots snapshots of the main branch (the
// topic's history: tagged snapshots and other branches are kept by their
// refs and count against no pin).
func (p *pass) pinnedAge(ctx context.Context, ret retention, now time.Time, meta table.Metadata) (time.Duration, PinReport, error) {
	pin := PinReport{Topic: p.opts.Topic}
	if p.opts.Pin == nil {
		return ret.maxAge, pin, nil
	}
	oldest, ok := p.opts.Pin(ctx, p.opts.Topic)
	if !ok {
		return ret.maxAge, pin, nil
	}
	need := now.Sub(time.UnixMilli(oldest)) + pinSlack
	if need <= ret.maxAge {
		return ret.maxAge, pin, nil
	}
	pin.Pinned, pin.OldestNeededMs, pin.HeldBy = true, oldest, HeldBySnapshots
	if need > ret.maxPin {
		pin.CappedBy = changelog.PropMaxPinMs
		need = max(ret.maxPin, ret.maxAge)
	}
	main, err := changelog.MainHistory(meta)
	if err != nil {
		return 0, pin, fmt.Errorf("main branch history: %w", err)
	}
	if byCount, ok := pinnedCountAge(main, ret.maxPinSnapshots, now); ok && need > byCount {
		pin.CappedBy = changelog.PropMaxPinSnapshots
		need = max(byCount, ret.maxAge)
	}
	return need, pin, nil
}

// pinnedCountAge is the age that keeps the newest max of the main branch's
// snapshots (oldest first), and those within pinSlack of the oldest of
// them; ok is false when the branch has no more than that.
func pinnedCountAge(main []changelog.SnapshotRef, maxSnaps int, now time.Time) (time.Duration, bool) {
	maxSnaps = max(maxSnaps, 1)
	if len(main) <= maxSnaps {
		return 0, false
	}
	return now.Sub(time.UnixMilli(main[len(main)-maxSnaps].TimestampMs)) + pinSlack, true
}

// changelogHold is what a consumer's pin asks of an LSM table's changelog:
// the commit time (ms) from which its changes must stay readable, cut at
// lakegw.consumer.max-pin (0: nothing pinned). The report calls it pinned
// when it reaches past the snapshots the table keeps anyway.
func (p *pass) changelogHold(ctx context.Context, ret retention, now time.Time) (PinReport, int64) {
	return p.hold(ctx, ret, now, HeldByChangelog)
}

// hold is the commit time (ms) from which a consumer's pin needs history
// kept by heldBy, cut at lakegw.consumer.max-pin (0: nothing pinned). The
// report calls it pinned when it reaches past the snapshots the table
// keeps anyway.
func (p *pass) hold(ctx context.Context, ret retention, now time.Time, heldBy string) (PinReport, int64) {
	pin := PinReport{Topic: p.opts.Topic, HeldBy: heldBy}
	if p.opts.Pin == nil {
		return pin, 0
	}
	oldest, ok := p.opts.Pin(ctx, p.opts.Topic)
	if !ok {
		return pin, 0
	}
	oldest -= pinSlack.Milliseconds()
	if floor := now.Add(-ret.maxPin).UnixMilli(); oldest < floor {
		pin.CappedBy, oldest = changelog.PropMaxPinMs, floor
	}
	pin.Pinned, pin.OldestNeededMs = now.Sub(time.UnixMilli(oldest)) > ret.maxAge, oldest
	return pin, oldest
}

// expiredSnapshots are the snapshots of before that after no longer has,
// oldest first.
func expiredSnapshots(before, after *table.Table) []table.Snapshot {
	kept := make(map[int64]bool)
	for _, s := range after.Metadata().Snapshots() {
		kept[s.SnapshotID] = true
	}
	var out []table.Snapshot
	for _, s := range before.Metadata().Snapshots() {
		if !kept[s.SnapshotID] {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b table.Snapshot) int {
		return cmp.Or(cmp.Compare(a.TimestampMs, b.TimestampMs), cmp.Compare(a.SequenceNumber, b.SequenceNumber))
	})
	return out
}
