package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/rs/zerolog"

	"github.com/lakegw/lakegw/lake"
	"github.com/lakegw/lakegw/quickstart"
)

// shortHistoryDemo creates the demo table in the embedded catalog under
// dir, set to keep only 10 snapshots whatever their age.
func shortHistoryDemo(t *testing.T, dir string) (catalog.Catalog, *quickstart.Demo) {
	t.Helper()
	ctx := context.Background()
	cat, err := lake.OpenCatalog(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := quickstart.NewDemo(cat, zerolog.Nop(), quickstart.DemoOptions{Seed: 21})
	tbl, err := d.Ensure(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.SetProperties(iceberg.Properties{table.MaxSnapshotAgeMsKey: "1", table.MinSnapshotsToKeepKey: "10"}); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	return cat, d
}

// TestMaintainCLI writes 60 demo snapshots with expiry set to keep 10,
// runs `lakegw maintain --dry-run` (which must change nothing) and then
// `lakegw maintain`, and checks the table afterwards against the demo's
// oracle; then a gateway's background maintenance keeps the table bounded
// while the demo goes on writing.
func TestMaintainCLI(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cat, d := shortHistoryDemo(t, dir)
	step := func(n int) {
		t.Helper()
		for range n {
			if _, err := d.Step(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	step(60)
	snapshots := func() int {
		t.Helper()
		tbl, err := cat.LoadTable(ctx, quickstart.DefaultTable())
		if err != nil {
			t.Fatal(err)
		}
		return len(tbl.Metadata().Snapshots())
	}
	maintainCLI := func(extra ...string) string {
		t.Helper()
		args := append([]string{"maintain", quickstart.DefaultTableName, "--data-dir", dir, "--log-level", "warn"}, extra...)
		out, err := exec.Command(lakegwBin, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("lakegw %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}

	out := maintainCLI("--dry-run")
	t.Log(out)
	if !strings.Contains(out, "dry run") || !strings.Contains(out, "snapshots expired:   50 of 60") || snapshots() != 60 {
		t.Fatalf("dry run: %d snapshots after it (want 60 kept)\n%s", snapshots(), out)
	}
	out = maintainCLI()
	t.Log(out)
	for _, want := range []string{"compaction:          ", "data files rewritten", "manifests:", "files removed:", "orphans:", "pins:"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	if n := snapshots(); n > 12 {
		t.Fatalf("%d snapshots after lakegw maintain, want about 10", n)
	}
	live, err := d.LiveRows(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := d.Expected(); len(live) != len(want) {
		t.Fatalf("after maintenance the table has %d orders, the demo expects %d", len(live), len(want))
	}
	for id, o := range d.Expected() {
		if !live[id].Equal(o) {
			t.Fatalf("order %d after maintenance: %+v, want %+v", id, live[id], o)
		}
	}

	// serve maintains the demo table (lakegw.maintenance.enabled) in the
	// background while the demo commits.
	g := startGateway(t, dir, "", "--maintain-interval", "500ms")
	deadline := time.Now().Add(60 * time.Second)
	for i := 0; ; i++ {
		step(5)
		if i >= 6 && snapshots() <= 16 && strings.Contains(g.Logs(), "expired snapshots") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("background maintenance did not keep the table bounded: %d snapshots\nlogs:\n%s", snapshots(), g.Logs())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestQuickstartMaintained runs `lakegw quickstart` with a fast demo and
// maintenance every second on a demo table set to keep 10 snapshots: the
// in-process maintainer pauses the demo to compact, expires, merges
// manifests, and the table stays bounded and readable while the demo goes
// on committing.
func TestQuickstartMaintained(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cat, _ := shortHistoryDemo(t, dir)
	addr := freeAddr(t)
	cmd := exec.Command(lakegwBin, "quickstart", "--data-dir", dir, "--listen", addr, "--demo-interval", "50ms",
		"--maintain-interval", "1s", "--log-format", "json")
	g := &gateway{t: t, cmd: cmd, addr: addr, dataDir: dir, done: make(chan error, 1)}
	cmd.Stderr = &lockedWriter{g: g}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { g.done <- cmd.Wait() }()
	t.Cleanup(g.stop)

	load := func() *table.Table {
		t.Helper()
		tbl, err := cat.LoadTable(ctx, quickstart.DefaultTable())
		if err != nil {
			t.Fatal(err)
		}
		return tbl
	}
	deadline := time.Now().Add(90 * time.Second)
	for !strings.Contains(g.Logs(), "compacted small files") || !strings.Contains(g.Logs(), "expired snapshots") {
		if time.Now().After(deadline) {
			t.Fatalf("no compaction and expiry within 90 s\nlogs:\n%s", g.Logs())
		}
		time.Sleep(500 * time.Millisecond)
	}
	// The demo goes on after the compaction rewrote its files.
	seq := load().Metadata().CurrentSnapshot().SequenceNumber
	for load().Metadata().CurrentSnapshot().SequenceNumber < seq+20 {
		if time.Now().After(deadline) {
			t.Fatalf("the demo stopped committing after maintenance\nlogs:\n%s", g.Logs())
		}
		time.Sleep(200 * time.Millisecond)
	}
	if strings.Contains(g.Logs(), "demo step failed") {
		t.Errorf("a demo step failed under maintenance\nlogs:\n%s", g.Logs())
	}
	tbl := load()
	if n := len(tbl.Metadata().Snapshots()); n > 60 {
		t.Errorf("%d snapshots retained; want about 10 plus a second of commits", n)
	}
	if _, err := tbl.Scan().ToArrowTable(ctx); err != nil {
		t.Fatalf("scan after maintenance: %v", err)
	}
}

// lockedWriter appends a process's output to a gateway's logs.
type lockedWriter struct{ g *gateway }

func (w *lockedWriter) Write(p []byte) (int, error) {
	w.g.mu.Lock()
	defer w.g.mu.Unlock()
	return w.g.logs.Write(p)
}
