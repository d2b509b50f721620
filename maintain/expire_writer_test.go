package maintain_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/lakegw/lakegw/lsm"
	"github.com/lakegw/lakegw/maintain"
	"github.com/lakegw/lakegw/quickstart"
)

// commitDuringExpiry is a retention hook that commits a demo snapshot
// between the staging of the expiry and its commit, every attempt: a
// writer committing faster than a pass can reload and stage.
type commitDuringExpiry struct {
	d       *quickstart.Demo
	commits int
	err     error
}

func (c *commitDuringExpiry) BeforeExpire(context.Context, *table.Table, time.Time, int64) error {
	return nil
}
func (c *commitDuringExpiry) AfterExpire(ctx context.Context, _ *table.Table, _ *table.Transaction, _ []table.Snapshot) error {
	if _, err := c.d.Step(ctx); err != nil {
		c.err = err
		return err
	}
	c.commits++
	return nil
}
func (c *commitDuringExpiry) KeepFiles(context.Context, *table.Table) (map[string]bool, error) {
	return map[string]bool{}, nil
}
func (c *commitDuringExpiry) Committed(context.Context, *table.Table) error { return nil }

// An expiry is not starved by a writer that commits while it is staged:
// it holds on any later head, so it does not insist the head stay where it
// was, and the writer's snapshot survives it.
func TestExpiryIsNotStarvedByAWriter(t *testing.T) {
	ctx := context.Background()
	cat, d, log := agedDemo(t, 30)
	ident := quickstart.DefaultTable()
	w := &commitDuringExpiry{d: d}
	rep, err := maintain.Run(ctx, cat, ident, maintain.Options{Log: log, Retention: w, SkipOrphans: true, CompactDataFiles: -1})
	if err != nil || w.err != nil {
		t.Fatalf("pass: %v (writer: %v)", err, w.err)
	}
	if w.commits != 1 || rep.Expiry.Expired == 0 {
		t.Fatalf("the writer committed %d times during the expiry, %d snapshots expired: want 1 commit and an expiry", w.commits, rep.Expiry.Expired)
	}
	tbl := loadTable(t, cat, ident)
	if n := len(tbl.Metadata().Snapshots()); n > 12 {
		t.Fatalf("%d snapshots after the expiry, want at most the 10 kept and the writer's", n)
	}
	live, err := d.LiveRows(ctx)
	if err != nil {
		t.Fatal(err)
	}
	requireSameOrders(t, "after an expiry a writer raced", live, d.Expected())
}

// conflictingCatalog refuses its first conflicts commits as the SQL
// catalog refuses one that lost a race with another writer's (its compare
// and swap of the metadata location failed), and passes the rest on.
type conflictingCatalog struct {
	catalog.Catalog
	conflicts int
	refused   int
}

func (c *conflictingCatalog) CommitTable(ctx context.Context, ident table.Identifier, reqs []table.Requirement, updates []table.Update) (table.Metadata, string, error) {
	if c.refused < c.conflicts {
		c.refused++
		return nil, "", fmt.Errorf("%w: table %v metadata-location moved underneath us", table.ErrCommitFailed, ident)
	}
	return c.Catalog.CommitTable(ctx, ident, reqs, updates)
}

// A writer committing while the changelog checkpoints are committed makes
// the pass commit them again on the new head, not fail: a busy LSM table's
// passes failed there one in four (a 4,000-commit soak), and what they did
// not expire the next pass had more of.
func TestCheckpointCommitRetriesAWriterConflict(t *testing.T) {
	ctx := context.Background()
	cat, ident, tb, log := newLSM(t, "raced", 1)
	writeLSM(t, tb, 30)
	racing := &conflictingCatalog{Catalog: cat, conflicts: 2}
	rep, err := maintain.Run(ctx, cat, ident, maintain.Options{Log: log, Retention: lsm.NewRetention(racing, log), SkipOrphans: true})
	if err != nil {
		t.Fatalf("pass with two conflicting checkpoint commits: %v", err)
	}
	if racing.refused != 2 {
		t.Fatalf("%d checkpoint commits refused, want 2: the test proves nothing", racing.refused)
	}
	if rep.Expiry.Expired == 0 {
		t.Fatalf("nothing expired after the retried checkpoint commit: %+v", rep.Expiry)
	}
	if oldestCheckpointMs(loadTable(t, cat, ident)) == 0 {
		t.Fatal("no changelog checkpoint committed")
	}
}
