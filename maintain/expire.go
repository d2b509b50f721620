package maintain

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/apache/iceberg-go/table"
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
	if p.opts.Retention != nil && !p.opts.DryRun {
		tbl, err := p.cat.LoadTable(ctx, p.ident)
		if err != nil {
			return fmt.Errorf("snapshot expiry: load %s: %w", p.name, err)
		}
		if err := p.opts.Retention.BeforeExpire(ctx, tbl, time.Now()); err != nil {
			return fmt.Errorf("retention hook before expiry of %s: %w", p.name, err)
		}
	}
	var expired []table.Snapshot
	base, committed, err := p.commitStepWith(ctx, "snapshot expiry", func(ctx context.Context, tbl *table.Table, tx *table.Transaction) (bool, error) {
		now := time.Now()
		ret := retentionOf(tbl.Properties(), p.opts)
		*rep = ExpiryReport{SnapshotsBefore: len(tbl.Metadata().Snapshots()), MinSnapshots: ret.minSnapshots}
		rep.MaxAge, rep.Pin = p.pinnedAge(ctx, ret, now)
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
		if len(expired) == 0 {
			return false, nil
		}
		if p.opts.Retention != nil && !p.opts.DryRun {
			if err := p.opts.Retention.AfterExpire(ctx, tbl, tx, expired); err != nil {
				return false, fmt.Errorf("retention hook after expiry: %w", err)
			}
		}
		if p.opts.DryRun {
			// What would be removed, from the staged metadata.
			files, err := unreferencedFiles(ctx, tbl, staged.Table, expired)
			rep.FilesRemoved = len(files)
			return true, err
		}
		return true, nil
	}, p.commitUnpinned)
	if err != nil || committed == nil {
		return err
	}
	p.log.Info().Int("expired", len(expired)).Int("retained", len(committed.Metadata().Snapshots())).
		Dur("max_age", rep.MaxAge).Bool("pinned", rep.Pin.Pinned).Msg("expired snapshots")
	if p.opts.Retention != nil {
		if err := p.opts.Retention.Committed(ctx, committed); err != nil {
			return fmt.Errorf("retention hook after expiry commit of %s: %w", p.name, err)
		}
	}
	files, err := unreferencedFiles(ctx, base, committed, expired)
	if err != nil {
		return fmt.Errorf("files of expired snapshots of %s: %w", p.name, err)
	}
	n, err := removeAll(ctx, committed, files)
	rep.FilesRemoved = n
	if err != nil {
		return fmt.Errorf("remove files of expired snapshots of %s: %w", p.name, err)
	}
	return nil
}

// pinnedAge is the snapshot age to keep: the table's own, stretched back to
// the oldest snapshot a committed group offset still needs, but never past
// lakegw.consumer.max-pin.
func (p *pass) pinnedAge(ctx context.Context, ret retention, now time.Time) (time.Duration, PinReport) {
	pin := PinReport{Topic: p.opts.Topic}
	if p.opts.Pin == nil {
		return ret.maxAge, pin
	}
	oldest, ok := p.opts.Pin(ctx, p.opts.Topic)
	if !ok {
		return ret.maxAge, pin
	}
	need := now.Sub(time.UnixMilli(oldest)) + pinSlack
	if need <= ret.maxAge {
		return ret.maxAge, pin
	}
	pin.Pinned, pin.OldestNeededMs = true, oldest
	if need > ret.maxPin {
		pin.Capped = true
		need = max(ret.maxPin, ret.maxAge)
	}
	return need, pin
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
