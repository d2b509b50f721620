package topics

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
)

// A snapshot whose data file is damaged is not read again by every fetch
// at its offsets: the failure is remembered and its files are read again
// only after a backoff (issue 12: "retried with backoff"). The oracle is
// the file itself: put back at once, it is still reported damaged until
// the backoff passes, then read.
func TestDamagedSnapshotIsRetriedAfterABackoff(t *testing.T) {
	dir := t.TempDir()
	f := startRegistry(t, dir)
	ctx := context.Background()
	ident := table.Identifier{"ns", "d"}
	createTable(t, f, ident)
	before := dataFiles(t, dir)
	appendIDs(t, f.cat, ident, 1, 2, 3)
	waitFor(t, "3 records", func() bool { tp, ok := f.reg.Topic("ns.d"); return ok && tp.Index.HighWatermark(0) == 3 })
	tp, _ := f.reg.Topic("ns.d")
	seg, ok := tp.Index.Locate(0, 0)
	if !ok {
		t.Fatal("offset 0 not indexed")
	}
	var file string
	for p := range dataFiles(t, dir) {
		if !before[p] {
			file = p
		}
	}
	if file == "" {
		t.Fatal("no data file written")
	}

	// The derivation was cached by indexing, which may add it after the
	// high watermark moved: wait for it (else it lands after the removal
	// and answers the call within the backoff), then drop it and hide the
	// file.
	key := tp.changesKey(seg.SnapshotID, seg.Kind, tp.Encoding())
	waitFor(t, "the indexed snapshot's changes cached", func() bool { _, ok := tp.changes.Get(key); return ok })
	tp.changes.Remove(key)
	if err := os.Rename(file, file+".away"); err != nil {
		t.Fatal(err)
	}
	failedAt := time.Now()
	if _, err := tp.Changes(ctx, seg, tp.Encoding()); err == nil {
		t.Fatal("a snapshot whose data file is gone derived")
	}
	if err := os.Rename(file+".away", file); err != nil {
		t.Fatal(err)
	}
	// Repaired, but within the backoff: not read again.
	_, err := tp.Changes(ctx, seg, tp.Encoding())
	if time.Since(failedAt) < deriveRetryBase {
		if err == nil || !strings.Contains(err.Error(), "read again in") {
			t.Fatalf("within the backoff: %v, want the remembered failure", err)
		}
	}
	// After it, read again: the snapshot derives.
	time.Sleep(time.Until(failedAt.Add(deriveRetryBase + 50*time.Millisecond)))
	c, err := tp.Changes(ctx, seg, tp.Encoding())
	if err != nil {
		t.Fatalf("after the backoff: %v", err)
	}
	if got := c.CountByPartition(); got[0] != 3 {
		t.Fatalf("derived %v records, want 3", got)
	}
	if err := tp.failures.check(tp.changesKey(seg.SnapshotID, seg.Kind, tp.Encoding()), time.Now()); err != nil {
		t.Fatalf("a success leaves the failure remembered: %v", err)
	}
}

// The backoff doubles per failure, and a topic remembers a bounded number
// of failed snapshots, forgetting the one retried soonest.
func TestDeriveFailuresBackOffAndStayBounded(t *testing.T) {
	var f deriveFailures
	now := time.Now()
	k := changesKey{topic: "t", snapshotID: 1}
	for i := range 3 {
		f.failed(k, os.ErrNotExist, now)
		want := deriveRetryBase << i
		if f.check(k, now.Add(want-time.Millisecond)) == nil || f.check(k, now.Add(want)) != nil {
			t.Fatalf("after %d failures the backoff is not %v", i+1, want)
		}
	}
	for i := range 2 * maxRememberedFailures {
		f.failed(changesKey{topic: "t", snapshotID: int64(100 + i)}, os.ErrNotExist, now.Add(time.Duration(i)*time.Millisecond))
	}
	if len(f.m) != maxRememberedFailures {
		t.Fatalf("%d failures remembered, want at most %d", len(f.m), maxRememberedFailures)
	}
	if f.check(k, now.Add(deriveRetryBase)) == nil {
		t.Fatal("the failure retried latest was forgotten first")
	}
}
