package main

import (
	"bytes"
	"encoding/json"
	stdlog "log"
	"strings"
	"testing"

	"github.com/rs/zerolog"
)

// TestStdLogIsStructuredAndScrubbed: a line of the standard logger (as
// iceberg-go writes them) becomes one event of the process's logger, with
// its secrets scrubbed; the benign missing-metadata warning is debug.
func TestStdLogIsStructuredAndScrubbed(t *testing.T) {
	w, flags, prefix := stdlog.Writer(), stdlog.Flags(), stdlog.Prefix()
	defer func() { stdlog.SetOutput(w); stdlog.SetFlags(flags); stdlog.SetPrefix(prefix) }()
	var out bytes.Buffer
	sc := newScrubber(map[string]string{"s3.secret-access-key": "hunter2hunter2"})
	routeStdLog(zerolog.New(sc.writer(&out)).Level(zerolog.DebugLevel))

	stdlog.Printf("Warning: Failed to delete old metadata file: %s error: %v", "file:///m/00001-a.metadata.json", "remove /m/00001-a.metadata.json: no such file or directory")
	stdlog.Printf("Warning: could not reach s3 with key %s", "hunter2hunter2")

	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2: %q", len(lines), out.String())
	}
	var ev []map[string]string
	for _, l := range lines {
		var m map[string]string
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("not a structured event: %q: %v", l, err)
		}
		ev = append(ev, m)
	}
	if ev[0]["level"] != "debug" || !strings.Contains(ev[0]["message"], "00001-a.metadata.json") {
		t.Errorf("missing old metadata file: %v, want a debug event naming the file", ev[0])
	}
	if ev[1]["level"] != "warn" || strings.Contains(lines[1], "hunter2hunter2") {
		t.Errorf("other warnings: %v, want a warn event with the secret scrubbed", ev[1])
	}
}
