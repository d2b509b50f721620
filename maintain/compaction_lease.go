package maintain

import (
	"context"
	"strconv"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// PropCompactionLease is the table property a compaction sets while it
// rewrites a merge-on-read table: the time (Unix ms) until which lakegw's
// own position-delete writers (the quickstart demo) hold their commits.
// Such a writer deletes rows in the very files a compaction rewrites, so
// each of its commits during the rewrite makes the compaction start over;
// at a few commits a second it never finishes and the table's files grow
// without bound. A property works across processes and gateways (a
// `lakegw maintain` beside a running quickstart), through any catalog. The
// compaction's own commit removes it; a crashed compaction's lease ends by
// itself.
const PropCompactionLease = "lakegw.compaction.lease-until-ms"

// CompactionLease is how long a compaction holds writers: longer than a
// rewrite of a table worth compacting takes here, short enough that a
// crashed compaction stalls a writer briefly.
const CompactionLease = 30 * time.Second

// CompactionLeaseUntil says until when a compaction holds the table's
// writers (held false: no lease, an unparsable one, or one that ended). A
// lease further ahead than CompactionLease is read as CompactionLease from
// now: a writer never waits longer on a bad value.
func CompactionLeaseUntil(props iceberg.Properties, now time.Time) (until time.Time, held bool) {
	v, ok := props[PropCompactionLease]
	if !ok {
		return time.Time{}, false
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return time.Time{}, false
	}
	until = time.UnixMilli(ms)
	if !until.After(now) {
		return time.Time{}, false
	}
	if limit := now.Add(CompactionLease); until.After(limit) {
		until = limit
	}
	return until, true
}

// takeLease sets the compaction lease on the table. Properties do not move
// the main branch, so a writer's commit in flight still lands (the rewrite
// that follows sees it, or retries on it once); the lease commit itself
// reloads and retries when a writer committed first.
func (c *compaction) takeLease(ctx context.Context) error {
	until := strconv.FormatInt(time.Now().Add(CompactionLease).UnixMilli(), 10)
	_, _, err := c.commitStepWith(ctx, "compaction lease", func(_ context.Context, _ *table.Table, tx *table.Transaction) (bool, error) {
		return true, tx.SetProperties(iceberg.Properties{PropCompactionLease: until})
	}, c.commitUnpinned)
	if err != nil {
		return err
	}
	c.leased = true
	return nil
}

// releaseLease removes a lease the compaction did not end with its own
// commit (it failed, or lost every race).
func (c *compaction) releaseLease(ctx context.Context) {
	if !c.leased || c.committed {
		return
	}
	_, _, err := c.commitStepWith(ctx, "end of the compaction lease", func(_ context.Context, tbl *table.Table, tx *table.Transaction) (bool, error) {
		if _, set := tbl.Properties()[PropCompactionLease]; !set {
			return false, nil
		}
		return true, tx.RemoveProperties([]string{PropCompactionLease})
	}, c.commitUnpinned)
	if err != nil {
		c.log.Warn().Err(err).Msg("could not end the compaction lease; it ends by itself")
	}
}
