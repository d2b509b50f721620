package maintain_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/rs/zerolog"

	"github.com/lakegw/lakegw/changelog"
	"github.com/lakegw/lakegw/lsm"
	"github.com/lakegw/lakegw/maintain"
)

// TestMainBranchKeepingMoreThanTheChangelog runs an LSM table whose main
// branch comes to keep more history than its changelog retention: first a
// fast writer (the changelog log holds what expired), then
// history.expire.min-snapshots-to-keep holds snapshots older than every
// checkpoint, as a slow writer's does. The main branch then holds the
// oldest checkpoint itself and nothing needs logging: that is no broken
// chain, and the gateway must not be told its changelog was cut (a
// 4,000-commit soak logged it once a run).
func TestMainBranchKeepingMoreThanTheChangelog(t *testing.T) {
	ctx := context.Background()
	cat, ident, tb, _ := newLSM(t, "slow", 1)
	var logs bytes.Buffer
	log := zerolog.New(&logs).Level(zerolog.WarnLevel)
	// A checkpoint every 500 ms, changes kept 2 s; main keeps 5.
	setProps(t, cat, ident, map[string]string{changelog.PropRetentionMs: "2000", table.MinSnapshotsToKeepKey: "5"})
	pass := func() {
		t.Helper()
		if _, err := maintain.Run(ctx, cat, ident, maintain.Options{Log: log, Retention: lsm.NewRetention(cat, log), SkipOrphans: true}); err != nil {
			t.Fatal(err)
		}
	}
	logged := func() int {
		t.Helper()
		tbl := loadTable(t, cat, ident)
		fsys, err := tbl.FS(ctx)
		if err != nil {
			t.Fatal(err)
		}
		path := tbl.Properties()[changelog.PropLSMChangelogLog]
		if path == "" {
			return 0
		}
		l, err := changelog.ReadLSMLogHead(fsys, path)
		if err != nil {
			t.Fatal(err)
		}
		return l.Len()
	}
	// Until the changelog log holds expired snapshots: more commits a
	// pass than main keeps, so that its oldest checkpoint falls behind.
	for i := 0; logged() == 0; i++ {
		if i == 10 {
			t.Fatal("the fast writer's expired snapshots were never logged: the test would prove nothing")
		}
		writeLSM(t, tb, 12)
		pass()
	}
	// Main now keeps far more than 2 s of history, and the checkpoints
	// from before move out of the changelog retention, until the oldest
	// left is one the main branch holds.
	setProps(t, cat, ident, map[string]string{table.MinSnapshotsToKeepKey: "500"})
	for start := time.Now(); !mainHoldsOldestCheckpoint(t, loadTable(t, cat, ident)); {
		if time.Since(start) > time.Minute {
			t.Fatal("the main branch never came to hold the oldest checkpoint: the test would prove nothing")
		}
		writeLSM(t, tb, 1)
		pass()
		time.Sleep(250 * time.Millisecond)
	}
	writeLSM(t, tb, 1)
	pass()
	if strings.Contains(logs.String(), "no longer leads") {
		t.Fatalf("a main branch holding the oldest checkpoint was taken for a broken chain:\n%s", logs.String())
	}
	if n := logged(); n != 0 {
		t.Errorf("%d snapshots still logged past the retention the main branch already keeps", n)
	}
}

// mainHoldsOldestCheckpoint reports whether the oldest changelog checkpoint
// of tbl is a snapshot of its main branch's retained history.
func mainHoldsOldestCheckpoint(t *testing.T, tbl *table.Table) bool {
	t.Helper()
	hist, err := changelog.MainHistory(tbl.Metadata())
	if err != nil {
		t.Fatal(err)
	}
	oldest := oldestCheckpointMs(tbl)
	for _, h := range hist {
		if h.TimestampMs == oldest && oldest != 0 {
			return true
		}
	}
	return false
}
