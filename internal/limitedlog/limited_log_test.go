package limitedlog

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// A kind of event is logged once per interval, and the next line says how
// many were left out; every one is counted.
func TestOneLinePerIntervalAndCounts(t *testing.T) {
	l := New(time.Second)
	now := time.Unix(1000, 0)
	l.now = func() time.Time { return now }
	var out bytes.Buffer
	log := zerolog.New(&out)
	write := func(k string) bool {
		ev := l.Warn(log, k)
		ev.Msg(k)
		return ev != nil
	}
	if !write("bad frame") {
		t.Fatal("first event of a kind not logged")
	}
	for range 5 {
		if write("bad frame") {
			t.Fatal("event within the interval logged")
		}
	}
	if !write("other kind") {
		t.Fatal("another kind is held back by the first")
	}
	now = now.Add(time.Second)
	if !write("bad frame") {
		t.Fatal("event after the interval not logged")
	}
	if l.Count("bad frame") != 7 {
		t.Fatalf("counted %d events of a kind, want 7", l.Count("bad frame"))
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 3 || !strings.Contains(lines[2], `"suppressed_since_last":5,"total":7`) {
		t.Fatalf("lines %q, want 3 with the last saying 5 of 7 left out", lines)
	}
	if ev := l.Event(log, zerolog.ErrorLevel, "damaged"); ev == nil {
		t.Fatal("first event at error level not logged")
	} else {
		ev.Msg("damaged")
	}
	if !strings.Contains(out.String(), `"level":"error"`) {
		t.Fatalf("no error-level line: %s", out.String())
	}
}
