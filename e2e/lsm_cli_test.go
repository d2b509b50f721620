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
// gateway serves the table's changelog as a 2-partition topic. A v3 table
// (--format-version 3) gets the same loads, with deletion vectors.
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
	// The same loads into a v3 table: deletion vectors instead of
	// position delete files.
	run("table", "create", "shop.stock3", "--schema", "id long, name string, qty long", "--primary-key", "id",
		"--buckets", "2", "--merge-engine", "aggregation", "--agg", "qty=sum", "--format-version", "3")
	run("load", "shop.stock3", jsonl)
	run("load", "shop.stock3", csv)
	if got := strings.TrimSpace(run("get", "shop.stock3", "2")); got != `{"id":2,"name":"pear","qty":7}` {
		t.Fatalf("v3 get 2: %s", got)
	}
	if dvs, _ := filepath.Glob(filepath.Join(dir, "warehouse", "shop.db", "stock3", "data", "bucket-*", "*-dv.puffin")); len(dvs) == 0 {
		t.Fatalf("the v3 table has no deletion vector files")
	}
	if out, err := exec.Command(lakegwBin, "table", "create", "shop.v1", "--schema", "id long", "--primary-key", "id",
		"--format-version", "1", "--data-dir", dir).CombinedOutput(); err == nil || !strings.Contains(string(out), "format version 1") {
		t.Fatalf("--format-version 1: %v %s", err, out)
	}
	g := startGateway(t, dir, "")
	rp := newLsmReplayer(t, g.addr, "shop.stock", 2)
	// 3 inserts, then +U of 2 and -D of 3: 5 events (the compaction none).
	rp.consumeTo(5, g)
	want := map[string]string{"1": "1|apple|7|null", "2": "2|pear|7|null"}
	if d := diffRows(rp.state, want); d != "" {
		t.Fatalf("replay:\n%s", d)
	}
	rp3 := newLsmReplayer(t, g.addr, "shop.stock3", 2)
	rp3.consumeTo(5, g)
	if d := diffRows(rp3.state, want); d != "" {
		t.Fatalf("v3 replay:\n%s", d)
	}
}
