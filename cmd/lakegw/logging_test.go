package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestConsoleLogsToAFileHaveNoColour reproduces issue 18's `lakegw serve 2>
// file`: the console format wrote ANSI colour codes into the file. Logs to
// a file (or a pipe) are plain; a terminal keeps colours unless NO_COLOR is
// set.
func TestConsoleLogsToAFileHaveNoColour(t *testing.T) {
	path := filepath.Join(t.TempDir(), "stderr")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	log, err := newLoggerTo(f, "info", "console", newScrubber(nil))
	if err != nil {
		t.Fatal(err)
	}
	log.Info().Str("topic", "ns.t").Msg("serving")
	log.Error().Msg("something failed")
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(got), "serving") || !strings.Contains(string(got), "topic=ns.t") {
		t.Fatalf("log file holds %q", got)
	}
	if strings.Contains(string(got), "\x1b[") {
		t.Errorf("log file holds ANSI escape codes: %q", got)
	}

	// /dev/null is a character device, not a terminal.
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	if colorTerminal(null) {
		t.Error("/dev/null is taken for a terminal")
	}
	tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0)
	if err != nil {
		t.Logf("no terminal to check colours on: %v", err)
		return
	}
	defer tty.Close()
	t.Setenv("NO_COLOR", "")
	if !colorTerminal(tty) {
		t.Error("a terminal gets no colours")
	}
	t.Setenv("NO_COLOR", "1")
	if colorTerminal(tty) {
		t.Error("NO_COLOR=1 still colours a terminal")
	}
}
