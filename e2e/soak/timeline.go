package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// writeTimeline writes timeline.csv to dir: one row per sample of the
// writing phase, each writer's commits so far, gateway CPU seconds, RSS and
// the walked byte counts. The ratios compare two windows; the timeline
// shows where between them a figure grew, and which writer's pace changed
// (gateway CPU per commit depends on the mix of commits a second).
func writeTimeline(dir string, samples []sample, writers []*writer) error {
	if dir == "" || len(samples) == 0 {
		return nil
	}
	var b strings.Builder
	b.WriteString("seconds")
	for _, w := range writers {
		b.WriteString(",commits." + w.topic)
	}
	b.WriteString(",gateway_cpu_seconds,rss_bytes,metadata_dir_bytes,disk_bytes\n")
	t0 := samples[0].at
	for _, s := range samples {
		fmt.Fprintf(&b, "%.2f", s.at.Sub(t0).Seconds())
		for i := range writers {
			var n int64
			if i < len(s.perWriter) {
				n = s.perWriter[i]
			}
			fmt.Fprintf(&b, ",%d", n)
		}
		fmt.Fprintf(&b, ",%.3f,%d,%d,%d\n", s.cpu, s.rss, s.metaDirs, s.disk)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "timeline.csv"), []byte(b.String()), 0o644)
}
