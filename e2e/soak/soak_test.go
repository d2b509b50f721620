package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestSoakQuick runs the quick soak (`make soak-quick`, with fewer commits:
// LAKEGW_SOAK_COMMITS, default 300) as a separate process, built without
// the race detector, and checks its results: fidelity strictly (every
// group's copy and the cold replay equal an iceberg-go scan of every
// table; the log ends survive the restart, no group skipped silently);
// the growth ratios are logged.
func TestSoakQuick(t *testing.T) {
	if testing.Short() {
		t.Skip("the soak takes minutes: not in -short")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the soak builds lakegw and itself: no go command in PATH")
	}
	commits := 300
	if s := os.Getenv("LAKEGW_SOAK_COMMITS"); s != "" {
		if commits, err = strconv.Atoi(s); err != nil || commits < 50 {
			t.Fatalf("LAKEGW_SOAK_COMMITS=%q: want a count of at least 50", s)
		}
	}
	dir := t.TempDir()
	lakegw, soak := filepath.Join(dir, "lakegw"), filepath.Join(dir, "soak")
	for bin, pkg := range map[string]string{lakegw: "github.com/lakegw/lakegw/cmd/lakegw", soak: "github.com/lakegw/lakegw/e2e/soak"} {
		if out, err := exec.Command(goBin, "build", "-o", bin, pkg).CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", pkg, err, out)
		}
	}
	maintain := hasMaintenance(lakegw)
	ctx := context.Background()
	if dl, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, dl.Add(-30*time.Second))
		defer cancel()
	}
	out := filepath.Join(dir, "out")
	cmd := exec.CommandContext(ctx, soak, "-commits", strconv.Itoa(commits), "-maintain="+strconv.FormatBool(maintain),
		"-lakegw", lakegw, "-work", filepath.Join(dir, "work"), "-out", out)
	stdout, err := cmd.Output()
	t.Logf("soak output:\n%s", stdout)
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("soak: %v\n%s", err, tail(stderr, 8000))
	}
	js, err := os.ReadFile(filepath.Join(out, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res results
	if err := json.Unmarshal(js, &res); err != nil {
		t.Fatalf("results.json: %v", err)
	}
	if len(res.Checks) < 10 {
		t.Fatalf("only %d fidelity checks ran, want 10 (2 groups and a cold replay for 3 tables, and the restart)", len(res.Checks))
	}
	for _, c := range res.Checks {
		if !c.OK {
			t.Errorf("fidelity: %s: %s", c.Name, c.Detail)
		}
	}
	// The growth ratios are the benchmark's (`make soak`, 20,000 commits):
	// 300 commits compare a steady state with its own ramp-up, and a
	// maintenance pass behind on a busy 2-core machine doubles a small
	// table's metadata. Here they are reported, not judged.
	for _, r := range res.Ratios {
		t.Logf("ratio %s = %.2f (%.3g -> %.3g %s; goal %g)", r.Name, r.Value, r.First, r.Last, r.Unit, r.Goal)
	}
}

func tail(b []byte, n int) string {
	if len(b) > n {
		return fmt.Sprintf("...\n%s", b[len(b)-n:])
	}
	return string(b)
}

func TestMedianOfReplayWindows(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		var d []time.Duration
		for _, x := range v {
			d = append(d, time.Duration(x)*time.Millisecond)
		}
		return d
	}
	for _, c := range []struct {
		in   []time.Duration
		want time.Duration
	}{
		{ms(7), 7 * time.Millisecond},
		{ms(9, 3, 4), 4 * time.Millisecond},
		{ms(8, 2, 4, 6), 5 * time.Millisecond},
	} {
		in := append([]time.Duration(nil), c.in...)
		if got := median(c.in); got != c.want {
			t.Errorf("median(%v) = %v, want %v", c.in, got, c.want)
		}
		if fmt.Sprint(in) != fmt.Sprint(c.in) {
			t.Errorf("median reordered its input: %v", c.in)
		}
	}
}

// The metadata peak that measures growth with history leaves out the
// window where the stopped group pins history, and reports the pinned
// peak apart with no goal; without maintenance nothing pins.
func TestPinnedWindowIsReportedApart(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var samples []sample
	for i := range 40 {
		meta := int64(10 << 20)
		if i >= 12 && i < 20 { // the pinned stretch grows metadata/
			meta = 30 << 20
		}
		samples = append(samples, sample{at: t0.Add(time.Duration(i) * time.Second), commits: int64(i * 300), metaDirs: meta, allWriting: true})
	}
	ws := []*writer{{topic: "a"}, {topic: "b"}, {topic: "c"}}
	c := config{maintain: true, maxPin: 6 * time.Second, maintainInterval: 2 * time.Second}
	var r results
	r.growthRatios(samples, ws, 1000, c.pinWindow("g", t0.Add(12*time.Second)))
	byName := map[string]ratio{}
	for _, x := range r.Ratios {
		byName[x.Name] = x
	}
	if x := byName["metadata_dir_bytes_peak_vs_first"]; x.Value != 1 || x.Goal != 2 {
		t.Errorf("outside the pinned window: %+v, want 1 with goal 2", x)
	}
	if x, ok := byName["metadata_dir_bytes_pinned_peak_vs_first"]; !ok || x.Value != 3 || x.Goal != 0 {
		t.Errorf("pinned window: %+v (reported %v), want 3 with no goal", x, ok)
	}

	c.maintain = false
	r = results{}
	r.growthRatios(samples, ws, 1000, c.pinWindow("g", t0.Add(12*time.Second)))
	for _, x := range r.Ratios {
		if x.Name == "metadata_dir_bytes_pinned_peak_vs_first" {
			t.Error("a run without maintenance reports a pinned window")
		}
		if x.Name == "metadata_dir_bytes_peak_vs_first" && x.Value != 3 {
			t.Errorf("without maintenance every sample counts: %+v", x)
		}
	}
}
