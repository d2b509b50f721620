package lake

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// PropCompactionLease is the table property a compaction sets while it
// rewrites files: the time (Unix ms) until which lakegw's own writers of
// that table (the quickstart demo, the LSM writer) hold their commits.
// Such a writer deletes rows in the very files a compaction rewrites, so
// each of its commits during the rewrite makes the compaction start over;
// at a few commits a second it never finishes and the table's files grow
// without bound. A property works across processes and gateways (a
// `lakegw maintain` beside a running quickstart, a compactor in the
// gateway beside a writer elsewhere), through any catalog. The
// compaction's own commit removes it; a crashed compaction's lease ends by
// itself.
const PropCompactionLease = "lakegw.compaction.lease-until-ms"

// CompactionLease is how long a compaction holds writers: longer than a
// rewrite of a table worth compacting takes here, short enough that a
// crashed compaction stalls a writer briefly.
const CompactionLease = 30 * time.Second

// leasePoll is how often a held writer looks again: the compaction's
// commit ends the lease before its time.
const leasePoll = 100 * time.Millisecond

// leaseCommitAttempts bounds the reload-and-retry of a lease commit.
const leaseCommitAttempts = 8

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

// LoadUnleased loads a table once no compaction holds it: what a writer
// of lakegw's calls before it plans a commit.
func LoadUnleased(ctx context.Context, cat catalog.Catalog, ident table.Identifier) (*table.Table, error) {
	for {
		tbl, err := cat.LoadTable(ctx, ident)
		if err != nil {
			// A cancel in the middle of the SQL catalog's transaction
			// surfaces as database/sql's "transaction has already been
			// committed or rolled back": the caller must see the cancel.
			if ctxErr := ctx.Err(); ctxErr != nil {
				err = ctxErr
			}
			return nil, fmt.Errorf("load %s: %w", strings.Join(ident, "."), err)
		}
		until, held := CompactionLeaseUntil(tbl.Properties(), time.Now())
		if !held {
			return tbl, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(min(time.Until(until), leasePoll)):
		}
	}
}

// TakeCompactionLease sets the lease on a table. Properties do not move
// the main branch, so a writer's commit in flight still lands (the rewrite
// that follows sees it, or retries on it once); when a writer committed
// first the lease commit reloads and retries.
func TakeCompactionLease(ctx context.Context, cat catalog.Catalog, ident table.Identifier) error {
	until := strconv.FormatInt(time.Now().Add(CompactionLease).UnixMilli(), 10)
	return commitProperties(ctx, cat, ident, "take the compaction lease", func(_ *table.Table, tx *table.Transaction) (bool, error) {
		return true, tx.SetProperties(iceberg.Properties{PropCompactionLease: until})
	})
}

// EndCompactionLease removes a lease a compaction did not end with its own
// commit (it failed, or lost every race). The compaction's commit ends it
// by staging EndLeaseIn on its transaction.
func EndCompactionLease(ctx context.Context, cat catalog.Catalog, ident table.Identifier) error {
	return commitProperties(ctx, cat, ident, "end the compaction lease", func(tbl *table.Table, tx *table.Transaction) (bool, error) {
		if _, set := tbl.Properties()[PropCompactionLease]; !set {
			return false, nil
		}
		return true, EndLeaseIn(tx)
	})
}

// EndLeaseIn stages the end of the compaction lease on a transaction: the
// compaction's own commit ends it.
func EndLeaseIn(tx *table.Transaction) error {
	if err := tx.RemoveProperties([]string{PropCompactionLease}); err != nil {
		return fmt.Errorf("stage the end of the compaction lease: %w", err)
	}
	return nil
}

// commitProperties stages a property change on the loaded table and
// commits it, reloading and staging again after a conflicting commit.
// iceberg-go's commit removes the metadata files that fall out of the log.
func commitProperties(ctx context.Context, cat catalog.Catalog, ident table.Identifier, what string,
	stage func(*table.Table, *table.Transaction) (bool, error)) error {
	var lastErr error
	for range leaseCommitAttempts {
		tbl, err := cat.LoadTable(ctx, ident)
		if err != nil {
			return fmt.Errorf("%s: load %s: %w", what, strings.Join(ident, "."), err)
		}
		tx := tbl.NewTransaction()
		ok, err := stage(tbl, tx)
		if err != nil || !ok {
			return err
		}
		_, err = tx.Commit(ctx)
		if err == nil {
			return nil
		}
		if !IsCommitConflict(err) {
			return fmt.Errorf("%s of %s: %w", what, strings.Join(ident, "."), err)
		}
		lastErr = err
	}
	return fmt.Errorf("%s of %s: %d conflicting commits: %w", what, strings.Join(ident, "."), leaseCommitAttempts, lastErr)
}
