package maintain_test

import (
	"context"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/rs/zerolog"

	"github.com/lakegw/lakegw/maintain"
	"github.com/lakegw/lakegw/quickstart"
)

// scanRows reads every row of the table's current snapshot as tbl knows it.
func scanRows(ctx context.Context, tbl *table.Table) (int, error) {
	_, itr, err := tbl.Scan().ToArrowRecords(ctx)
	if err != nil {
		return 0, err
	}
	rows := 0
	for rec, err := range itr {
		if err != nil {
			return rows, err
		}
		rows += int(rec.NumRows())
		rec.Release()
	}
	return rows, nil
}

// TestExpiryHoldsFilesForTheGrace: a pass with Options.Removals expires
// snapshots but keeps the files only they referenced for the grace, so a
// reader that loaded the table before the pass still scans its snapshot in
// full (a raw topic keeps snapshots 30 seconds), orphan cleanup included;
// a later pass, even one that expires nothing, removes them once the grace
// has run out.
func TestExpiryHoldsFilesForTheGrace(t *testing.T) {
	ctx := context.Background()
	cat, _ := openCatalog(t)
	log := zerolog.New(zerolog.NewTestWriter(t)).Level(zerolog.WarnLevel)
	d := quickstart.NewDemo(cat, log, quickstart.DemoOptions{Seed: 5})
	for range 6 {
		if _, err := d.Step(ctx); err != nil {
			t.Fatal(err)
		}
	}
	ident := quickstart.DefaultTable()
	early := loadTable(t, cat, ident)
	want, err := scanRows(ctx, early)
	if err != nil {
		t.Fatal(err)
	}
	for range 6 {
		if _, err := d.Step(ctx); err != nil {
			t.Fatal(err)
		}
	}
	setProps(t, cat, ident, iceberg.Properties{table.MaxSnapshotAgeMsKey: "1", table.MinSnapshotsToKeepKey: "1"})

	held := &maintain.DeferredRemovals{Grace: time.Hour}
	rep, err := maintain.Run(ctx, cat, ident, maintain.Options{Log: log, Removals: held, SkipOrphans: true, CompactDataFiles: -1})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Expiry.Expired == 0 || held.Len() == 0 {
		t.Fatalf("expired %d snapshots, holding %d files: the test proves nothing", rep.Expiry.Expired, held.Len())
	}
	if rep.Expiry.FilesRemoved != 0 {
		t.Errorf("%d files removed within the grace", rep.Expiry.FilesRemoved)
	}
	if got, err := scanRows(ctx, early); err != nil || got != want {
		t.Fatalf("a snapshot expired within the grace scans %d rows (%v), want %d", got, err, want)
	}

	// Orphan cleanup keeps what is held, however old the files look.
	ageAll(t, localDir(early.Location()), time.Now().Add(-48*time.Hour))
	rep, err = maintain.Run(ctx, cat, ident, maintain.Options{Log: log, Removals: held, CompactDataFiles: -1})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := scanRows(ctx, early); err != nil || got != want {
		t.Fatalf("after orphan cleanup (%d orphans removed) a snapshot expired within the grace scans %d rows (%v), want %d",
			rep.Orphans.Removed, got, err, want)
	}

	n := held.Len()
	held.Grace = 0
	rep, err = maintain.Run(ctx, cat, ident, maintain.Options{Log: log, Removals: held, SkipOrphans: true, CompactDataFiles: -1})
	if err != nil {
		t.Fatal(err)
	}
	// It may expire more (what the first pass kept by count), whose
	// files go at once now.
	if rep.Expiry.FilesRemoved < n || held.Len() != 0 {
		t.Fatalf("second pass: removed %d files, %d were held; %d still held", rep.Expiry.FilesRemoved, n, held.Len())
	}
	if _, err := scanRows(ctx, early); err == nil {
		t.Error("the expired snapshot still scans after its files' grace: nothing was removed")
	}
	// A pass that expires nothing still removes what is due.
	held.Grace = time.Hour
	for range 3 {
		if _, err := d.Step(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for pass := 0; ; pass++ {
		rep, err := maintain.Run(ctx, cat, ident, maintain.Options{Log: log, Removals: held, SkipOrphans: true, CompactDataFiles: -1})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Expiry.Expired == 0 {
			break
		}
		if pass == 5 {
			t.Fatal("every pass expires more")
		}
	}
	n = held.Len()
	held.Grace = 0
	rep, err = maintain.Run(ctx, cat, ident, maintain.Options{Log: log, Removals: held, SkipOrphans: true, CompactDataFiles: -1})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 || rep.Expiry.Expired != 0 || rep.Expiry.FilesRemoved != n || held.Len() != 0 {
		t.Fatalf("a pass expiring %d snapshots removed %d of %d held files; %d still held", rep.Expiry.Expired, rep.Expiry.FilesRemoved, n, held.Len())
	}
	live, err := d.LiveRows(ctx)
	if err != nil {
		t.Fatal(err)
	}
	requireSameOrders(t, "after the held files went", live, d.Expected())
}
