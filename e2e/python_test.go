package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// Tests with the Python clients confluent-kafka (librdkafka underneath) and
// kafka-python (pure Python, its own protocol code) against the built
// gateway. The clients run the scripts in clients/, which print one JSON
// object per record; the tests compare them with the table writer's rows.
// LAKEGW_E2E_PYTHON picks the interpreter (default python3).

func pythonBin() string {
	if p := os.Getenv("LAKEGW_E2E_PYTHON"); p != "" {
		return p
	}
	return "python3"
}

// requirePython returns the interpreter, or skips/fails (CI=true) when it or
// the client module is missing. It logs the client's version.
func requirePython(t *testing.T, module, pipName string) string {
	t.Helper()
	py, err := exec.LookPath(pythonBin())
	if err != nil {
		missingTool(t, "%s is not installed", pythonBin())
	}
	probe := "import " + module + " as m; print(getattr(m, '__version__', '?'))"
	if module == "confluent_kafka" {
		probe = "import confluent_kafka as m; v = m.version(); print(v[0] if isinstance(v, tuple) else v, 'librdkafka', m.libversion()[0])"
	}
	stdout, stderr, err := runClientErr(t, py, "-c", probe)
	if err != nil {
		lines := strings.Split(strings.TrimSpace(string(stderr)), "\n")
		missingTool(t, "Python module %s is not importable by %s (pip install %s): %v: %s", module, py, pipName, err, lines[len(lines)-1])
	}
	t.Logf("%s %s", pipName, strings.TrimSpace(string(stdout)))
	return py
}

// pyOffsets parses the scripts' "times" output: timestamp -> offset (-1
// for none).
func pyOffsets(t *testing.T, out []byte) map[int64]int64 {
	t.Helper()
	got := map[int64]int64{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var r struct {
			Timestamp int64  `json:"timestamp"`
			Partition int32  `json:"partition"`
			Offset    *int64 `json:"offset"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil || r.Partition != 0 {
			t.Fatalf("bad offsets_for_times line %q: %v", line, err)
		}
		got[r.Timestamp] = -1
		if r.Offset != nil {
			got[r.Timestamp] = *r.Offset
		}
	}
	return got
}

// testPythonClient runs one script's modes against a 3-snapshot table:
// read everything from the beginning, a group member that commits and a
// second one that finds nothing new, offsets by snapshot timestamp, and
// read everything again from gateways sending each of codecs.
func testPythonClient(t *testing.T, py, script string, codecs ...string) {
	dir := t.TempDir()
	w := setupTable(t, dir)
	g := startGateway(t, dir, "")
	n := int64(len(w.allRows()))
	run := func(t *testing.T, args ...string) []byte {
		t.Helper()
		args = append([]string{script}, append(args, "--bootstrap", g.addr, "--topic", topic, "--timeout", "15")...)
		return runClient(t, g, py, args...)
	}

	t.Run("assign", func(t *testing.T) {
		checkRecords(t, w, parseRecords(t, run(t, "assign")))
	})

	t.Run("group", func(t *testing.T) {
		group := "py-" + strings.TrimSuffix(script[strings.LastIndexByte(script, '/')+1:], ".py")
		checkRecords(t, w, parseRecords(t, run(t, "group", "--group", group)))
		if got := committedOffset(t, g.addr, group); got != n {
			t.Fatalf("committed offset %d, want the end offset %d", got, n)
		}
		if recs := parseRecords(t, run(t, "group", "--group", group)); len(recs) != 0 {
			t.Fatalf("a second member of the group read %d records (first at offset %d), want none", len(recs), recs[0].Offset)
		}
		if got := committedOffset(t, g.addr, group); got != n {
			t.Fatalf("committed offset after the second member: %d, want %d", got, n)
		}
	})

	t.Run("offsets_for_times", func(t *testing.T) {
		args := []string{"times", "--ts"}
		for _, s := range w.Snaps {
			args = append(args, strconv.FormatInt(s.TimestampMs, 10))
		}
		after := w.Snaps[len(w.Snaps)-1].TimestampMs + 60_000
		args = append(args, strconv.FormatInt(after, 10))
		got := pyOffsets(t, run(t, args...))
		base := int64(0)
		for _, s := range w.Snaps {
			if o, ok := got[s.TimestampMs]; !ok || o != base {
				t.Fatalf("offsets_for_times(%d) = %d (present %v), want %d, the first offset of snapshot %d", s.TimestampMs, o, ok, base, s.SnapshotID)
			}
			base += int64(len(s.Rows))
		}
		// After the last commit there is no such record: -1 (None).
		if o, ok := got[after]; !ok || o != -1 {
			t.Fatalf("offsets_for_times after the last commit = %d (present %v), want -1 / None", o, ok)
		}
	})

	for _, codec := range codecs {
		t.Run("assign_"+codec, func(t *testing.T) {
			g.stop()
			g = startGateway(t, dir, "", "--compression", codec)
			checkRecords(t, w, parseRecords(t, run(t, "assign")))
		})
	}
}

func TestPythonConfluentKafka(t *testing.T) {
	py := requirePython(t, "confluent_kafka", "confluent-kafka")
	testPythonClient(t, py, "clients/confluent_consume.py", "lz4", "zstd")
}

func TestPythonKafkaPython(t *testing.T) {
	py := requirePython(t, "kafka", "kafka-python")
	// gzip is the codec kafka-python decodes without optional modules
	// (lz4, python-snappy, zstandard).
	testPythonClient(t, py, "clients/kafka_python_consume.py", "gzip")
}
