package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// ratio is one `ratio <name> <value>` line: a growth or slowdown of the
// end of the soak against its start, with the goal.
type ratio struct {
	Name  string  `json:"name"`
	Value float64 `json:"value"`
	Goal  float64 `json:"goal"` // 0: none
	// First and Last are the two figures compared, Unit says what they
	// measure.
	First float64 `json:"first"`
	Last  float64 `json:"last"`
	Unit  string  `json:"unit"`
}

// check is one fidelity check: a materialized copy against the oracle.
type check struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// results is what the soak prints and writes (results.md, results.json).
type results struct {
	Commits  int           `json:"commits"`
	Window   int           `json:"window"`
	Maintain bool          `json:"maintain"`
	Elapsed  time.Duration `json:"elapsed_ns"`
	Ratios   []ratio       `json:"ratios"`
	Checks   []check       `json:"checks"`
	// Groups says, per group and topic, what it saw: every change, or
	// truncations each followed by the log from its start.
	Groups []string `json:"groups"`
	Notes  []string `json:"notes"`
}

func (r *results) addRatio(name, unit string, first, last, goal float64) {
	v := 0.0
	if first > 0 {
		v = last / first
	}
	r.Ratios = append(r.Ratios, ratio{Name: name, Value: v, Goal: goal, First: first, Last: last, Unit: unit})
}

func (r *results) addCheck(name, diff string) {
	r.Checks = append(r.Checks, check{Name: name, OK: diff == "", Detail: diff})
}

// growthRatios adds the ratios of the writing phase: gateway CPU per
// commit and the peaks of metadata, disk and RSS, the last window of
// commits against the first (window commits per writer).
func (r *results) growthRatios(samples []sample, writers []*writer, window int, pinned pinWindow) {
	if len(samples) < 3 || window == 0 {
		r.Notes = append(r.Notes, "too few samples for the growth ratios")
		return
	}
	tw := int64(window * len(writers))
	firstEnd := slices.IndexFunc(samples, func(s sample) bool { return s.commits >= tw })
	if firstEnd <= 0 {
		firstEnd = 1
	}
	// CPU per commit is compared while every writer commits. Once one has
	// finished, the gateway's work that follows time, not commits
	// (maintenance passes, consumers polling, a stopped group catching
	// up), is shared by fewer commits a second: a writer that finishes
	// early made this ratio 10.6 in a 4,000-commit run whose other ratios
	// were all met.
	cpuEnd := len(samples) - 1
	for cpuEnd > firstEnd && !samples[cpuEnd].allWriting {
		cpuEnd--
	}
	lastStart := 0
	for i, s := range samples[:cpuEnd+1] {
		if s.commits <= samples[cpuEnd].commits-tw {
			lastStart = i
		}
	}
	perCommit := func(a, b sample) float64 {
		if b.commits == a.commits {
			return 0
		}
		return (b.cpu - a.cpu) / float64(b.commits-a.commits)
	}
	r.addRatio("gateway_cpu_per_commit_last_vs_first", "CPU ms per commit, while every writer commits",
		1000*perCommit(samples[0], samples[firstEnd]), 1000*perCommit(samples[lastStart], samples[cpuEnd]), 1.2)
	peak := func(ss []sample, f func(sample) int64) float64 {
		var m int64
		for _, s := range ss {
			m = max(m, f(s))
		}
		return float64(m)
	}
	first := samples[:firstEnd+1]
	for _, w := range writers {
		get := func(s sample) int64 { return s.metaJSON[w.topic] }
		r.addRatio("metadata_json_bytes_peak_vs_first."+w.topic, "newest metadata.json, KiB", peak(first, get)/1024, peak(samples, get)/1024, 2)
	}
	metaDirs := func(s sample) int64 { return s.metaDirs }
	unpinned, held := splitPinned(samples, pinned)
	r.addRatio("metadata_dir_bytes_peak_vs_first", "metadata/ of the tables lakegw writes, MiB, outside the pinned window",
		peak(first, metaDirs)/(1<<20), peak(unpinned, metaDirs)/(1<<20), 2)
	if len(held) > 0 {
		// Reported with no goal: a stopped group holds max-pin of
		// snapshots (their manifest lists and manifests) on purpose.
		r.addRatio("metadata_dir_bytes_pinned_peak_vs_first", "metadata/ while "+pinned.group+" pinned history, MiB",
			peak(first, metaDirs)/(1<<20), peak(held, metaDirs)/(1<<20), 0)
		r.Notes = append(r.Notes, fmt.Sprintf("%s's committed offsets pinned history from %.0f s to %.0f s of the run (max-pin %s, then two maintenance passes); metadata/ peaks inside it are reported apart",
			pinned.group, pinned.from.Sub(samples[0].at).Seconds(), pinned.to.Sub(samples[0].at).Seconds(), pinned.maxPin))
	}
	disk := func(s sample) int64 { return s.disk }
	r.addRatio("disk_bytes_peak_vs_first", "data directory less the batch cache and the foreign table, MiB", peak(first, disk)/(1<<20), peak(samples, disk)/(1<<20), 2)
	rss := func(s sample) int64 { return s.rss }
	r.addRatio("rss_peak_vs_first", "gateway RSS, MiB", peak(first, rss)/(1<<20), peak(samples, rss)/(1<<20), 2)
}

// commitRatios adds each writer's mean commit time, last window against
// the first.
func (r *results) commitRatios(writers []*writer, window int) {
	mean := func(d []time.Duration) float64 {
		var s time.Duration
		for _, x := range d {
			s += x
		}
		return float64(s.Microseconds()) / 1000 / float64(max(len(d), 1))
	}
	for _, w := range writers {
		n := min(window, len(w.took)/2)
		if n == 0 {
			continue
		}
		// The foreign writer is iceberg-go's own (its copy-on-write
		// deletes read every data file): reported, with no goal for lakegw.
		goal := 1.2
		if w.foreign {
			goal = 0
		}
		r.addRatio("writer_commit_time_last_vs_first."+w.topic, "ms per commit", mean(w.took[:n]), mean(w.took[len(w.took)-n:]), goal)
	}
}

// replayRatios compares, per topic, the median start and end windows of
// the cold replays (reps[pass][topic]).
func (r *results) replayRatios(reps [][]replayResult) {
	if len(reps) == 0 {
		return
	}
	for t, rp := range reps[0] {
		var firsts, lasts []time.Duration
		var each []string
		for _, pass := range reps {
			p := pass[t]
			if p.window == 0 || p.first == 0 || p.last == 0 {
				continue
			}
			firsts, lasts = append(firsts, p.first), append(lasts, p.last)
			each = append(each, fmt.Sprintf("%v → %v", p.first.Round(10*time.Microsecond), p.last.Round(10*time.Microsecond)))
		}
		if len(firsts) == 0 {
			r.Notes = append(r.Notes, fmt.Sprintf("%s: %d records, %d of them changes: too few to time a window of them", rp.topic, rp.records, rp.changes))
			continue
		}
		r.addRatio("cold_replay_per_1000_end_vs_start."+rp.topic, "cold replay, s per 1,000 changes (median of the replays)",
			median(firsts).Seconds(), median(lasts).Seconds(), 1.5)
		r.Notes = append(r.Notes, fmt.Sprintf("%s: cold replay of %d records (%d changes) in %v (windows of %d changes); per 1,000 changes, start → end, in each of %d replays: %s",
			rp.topic, rp.records, rp.changes, rp.elapsed.Round(time.Millisecond), rp.window, len(each), strings.Join(each, ", ")))
	}
}

// median returns the median of ds (the mean of the middle two of an even
// count).
func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

// write prints the results and writes results.md and results.json to dir.
func (r *results) write(stdout io.Writer, dir string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "# lakegw soak: %d commits per table, maintenance %v, %v\n\n", r.Commits, onOff(r.Maintain), r.Elapsed.Round(time.Second))
	fmt.Fprintf(&b, "Windows: the first and the last %d commits of each writer; for the cold replay, 1,000 change records (a quarter of a smaller topic's).\n\n", r.Window)
	b.WriteString("| ratio | first | last / peak | unit | ratio | goal |\n|---|---|---|---|---|---|\n")
	for _, x := range r.Ratios {
		goal := "-"
		if x.Goal > 0 {
			goal = fmt.Sprintf("<= %g", x.Goal)
		}
		fmt.Fprintf(&b, "| %s | %.3g | %.3g | %s | %.2f | %s |\n", x.Name, x.First, x.Last, x.Unit, x.Value, goal)
	}
	b.WriteString("\n| fidelity | result |\n|---|---|\n")
	for _, c := range r.Checks {
		res := "equal"
		if !c.OK {
			res = "DIFFERS: " + c.Detail
		}
		fmt.Fprintf(&b, "| %s | %s |\n", c.Name, res)
	}
	b.WriteString("\n")
	for _, s := range r.Groups {
		fmt.Fprintf(&b, "- %s\n", s)
	}
	for _, s := range r.Notes {
		fmt.Fprintf(&b, "- %s\n", s)
	}
	b.WriteString("\n")
	for _, x := range r.Ratios {
		fmt.Fprintf(&b, "ratio %s %.3f\n", x.Name, x.Value)
	}
	if _, err := io.WriteString(stdout, b.String()); err != nil {
		return err
	}
	if dir == "" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "results.md"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "results.json"), js, 0o644)
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// splitPinned splits samples into those outside the pinned window and
// those inside it.
func splitPinned(samples []sample, w pinWindow) (outside, inside []sample) {
	for _, s := range samples {
		if w.holds(s.at) {
			inside = append(inside, s)
		} else {
			outside = append(outside, s)
		}
	}
	return outside, inside
}
