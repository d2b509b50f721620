package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestLsmCLI drives the LSM table commands of the built binary: table
// create, load (JSON lines and CSV, with a delete), get, compact; then the
// gateway serves the table's changelog as a 2-partition topic.
func TestLsmCLI(t *testing.T) {
	dir := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(lakegwBin, append(args, "--data-dir", dir, "--log-level", "warn")...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("lakegw %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run("table", "create", "shop.stock", "--schema", "id long, name string, qty long", "--primary-key", "id",
		"--buckets", "2", "--merge-engine", "aggregation", "--agg", "qty=sum")
	jsonl := filepath.Join(dir, "a.jsonl")
	if err := os.WriteFile(jsonl, []byte(`{"id":1,"name":"apple","qty":2}
{"id":2,"name":"pear","qty":3}
{"id":1,"qty":5}
{"id":3,"name":"fig","qty":1}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	run("load", "shop.stock", jsonl)
	csv := filepath.Join(dir, "b.csv")
	if err := os.WriteFile(csv, []byte("id,name,qty,_op\n2,,4,\n3,,,delete\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run("load", "shop.stock", csv)
	if got := strings.TrimSpace(run("get", "shop.stock", "1")); got != `{"id":1,"name":"apple","qty":7}` {
		t.Fatalf("get 1: %s", got)
	}
	if got := strings.TrimSpace(run("get", "shop.stock", `{"id":2}`)); got != `{"id":2,"name":"pear","qty":7}` {
		t.Fatalf("get 2: %s", got)
	}
	if out, err := exec.Command(lakegwBin, "get", "shop.stock", "3", "--data-dir", dir).CombinedOutput(); err == nil {
		t.Fatalf("get of a deleted key succeeded: %s", out)
	}
	if out := run("compact", "shop.stock"); !strings.Contains(out, "compacted") {
		t.Fatalf("compact: %s", out)
	}
	if got := strings.TrimSpace(run("get", "shop.stock", "2")); got != `{"id":2,"name":"pear","qty":7}` {
		t.Fatalf("get 2 after compaction: %s", got)
	}
	g := startGateway(t, dir, "")
	rp := newLsmReplayer(t, g.addr, "shop.stock", 2)
	// 3 inserts, then +U of 2 and -D of 3: 5 events (the compaction none).
	rp.consumeTo(5, g)
	want := map[string]string{"1": "1|apple|7|null", "2": "2|pear|7|null"}
	if d := diffRows(rp.state, want); d != "" {
		t.Fatalf("replay:\n%s", d)
	}
}
