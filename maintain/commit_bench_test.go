package maintain_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lakegw/lakegw/maintain"
	"github.com/lakegw/lakegw/quickstart"
)

// BenchmarkDemoCommitHistory measures the demo writer's commit time at the
// start of a long history and at its end, with and without a maintenance
// pass every 60 commits (a minute of quickstart), and the table's metadata
// and file counts at the end. Run it once:
//
//	go test -run '^$' -bench DemoCommitHistory -benchtime 1x ./maintain
//
// Expiry keeps 10 snapshots whatever their age: at full speed 2,000
// commits take minutes, not the hours of a quickstart left running.
func BenchmarkDemoCommitHistory(b *testing.B) {
	for _, mode := range []struct {
		name     string
		maintain bool
	}{{"unmaintained", false}, {"maintained", true}} {
		b.Run(mode.name, func(b *testing.B) {
			for range b.N {
				runDemoHistory(b, mode.maintain)
			}
		})
	}
}

func runDemoHistory(b *testing.B, maintained bool) {
	const commits, window, every = 2000, 100, 60
	ctx := context.Background()
	cat, _ := openCatalog(b)
	log := zerolog.Nop()
	d := quickstart.NewDemo(cat, log, quickstart.DemoOptions{Seed: 1})
	tbl, err := d.Ensure(ctx)
	if err != nil {
		b.Fatal(err)
	}
	ident := quickstart.DefaultTable()
	setProps(b, cat, ident, aggressive)
	dir := localDir(tbl.Location())
	var first, last []time.Duration
	var start dirStats
	for i := 1; i <= commits; i++ {
		t0 := time.Now()
		if _, err := d.Step(ctx); err != nil {
			b.Fatalf("step %d: %v", i, err)
		}
		took := time.Since(t0)
		switch {
		case i <= window:
			first = append(first, took)
		case i > commits-window:
			last = append(last, took)
		}
		if i == window {
			start = statDir(b, dir)
		}
		if maintained && i%every == 0 {
			if _, err := maintain.Run(ctx, cat, ident, maintain.Options{Log: log}); err != nil {
				b.Fatalf("maintenance after %d commits: %v", i, err)
			}
		}
	}
	end := statDir(b, dir)
	snaps := len(loadTable(b, cat, ident).Metadata().Snapshots())
	// Medians: a shared machine's hiccups and the demo's reload after
	// each compaction (once a minute) are not the commit cost.
	firstMs, lastMs := medianMs(first), medianMs(last)
	b.ReportMetric(firstMs, "first100-median-ms/commit")
	b.ReportMetric(lastMs, "last100-median-ms/commit")
	b.ReportMetric(lastMs/firstMs, "commit-time-ratio")
	b.ReportMetric(float64(end.maxJSONBytes)/1024, "end-metadata-json-KB")
	b.ReportMetric(float64(end.files), "end-files")
	b.Logf("after %d commits: metadata.json %d KB, %d files (%d metadata.json, %d data/delete files); after %d commits: metadata.json %d KB, %d files (%d metadata.json, %d data/delete files), %d snapshots; commit %.1f ms -> %.1f ms",
		window, start.maxJSONBytes/1024, start.files, start.metadataJSON, start.dataFiles,
		commits, end.maxJSONBytes/1024, end.files, end.metadataJSON, end.dataFiles, snaps, firstMs, lastMs)
}

func medianMs(ds []time.Duration) float64 {
	slices.Sort(ds)
	return float64(ds[len(ds)/2].Microseconds()) / 1000
}
