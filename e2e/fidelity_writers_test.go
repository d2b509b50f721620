package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
)

// writerTable is one line of a writer's output: a table it wrote and the
// exact events it expects of some of its snapshots.
type writerTable struct {
	Name     string          `json:"name"`
	Metadata string          `json:"metadata"` // Java: the latest metadata file
	Expect   json.RawMessage `json:"expect"`
	Notes    []string        `json:"notes"`
}

// javaExpect turns the Java writer's {"<snapshot id>": {op: n}} into groups.
func (w writerTable) expectGroups(t *testing.T) []fidExpect {
	t.Helper()
	if len(w.Expect) == 0 {
		return nil
	}
	var groups []fidExpect
	if w.Expect[0] == '[' {
		if err := json.Unmarshal(w.Expect, &groups); err != nil {
			t.Fatalf("%s: expect: %v", w.Name, err)
		}
		return groups
	}
	var bySnap map[string]map[string]int
	if err := json.Unmarshal(w.Expect, &bySnap); err != nil {
		t.Fatalf("%s: expect: %v", w.Name, err)
	}
	for id, c := range bySnap {
		sid, err := strconv.ParseInt(id, 10, 64)
		if err != nil {
			t.Fatalf("%s: expect: snapshot id %q", w.Name, id)
		}
		groups = append(groups, fidExpect{Snapshots: []int64{sid}, Counts: c})
	}
	return groups
}

func parseWriterOutput(t *testing.T, out []byte) []writerTable {
	t.Helper()
	var tables []writerTable
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var w writerTable
		if err := json.Unmarshal([]byte(line), &w); err != nil {
			t.Fatalf("writer output %q: %v", line, err)
		}
		tables = append(tables, w)
	}
	if len(tables) == 0 {
		t.Fatalf("the writer reported no tables:\n%s", out)
	}
	return tables
}

// TestFidelityPyIceberg writes tables with PyIceberg into the gateway's
// embedded SQL catalog (PyIceberg's SqlCatalog on the same SQLite file,
// catalog name "lakegw"), which the gateway serves without registration.
func TestFidelityPyIceberg(t *testing.T) {
	t.Parallel()
	python, err := exec.LookPath("python3")
	if err == nil {
		err = exec.Command(python, "-c", "import pyiceberg.catalog.sql, pyarrow, pyiceberg_core").Run()
	}
	if err != nil {
		skipOrFailMissing(t, "PyIceberg (pip install -r e2e/writers/pyiceberg/requirements.txt)")
	}
	dir := t.TempDir()
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "writers/pyiceberg/write_tables.py", dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("PyIceberg writer: %v\n%s\n%s", err, out, stderr.String())
	}
	tables := parseWriterOutput(t, out)
	t.Logf("PyIceberg wrote %d tables in %v", len(tables), time.Since(start).Round(time.Millisecond))

	g := startGateway(t, dir, "")
	for _, w := range tables {
		t.Run(w.Name, func(t *testing.T) {
			for _, n := range w.Notes {
				t.Logf("PyIceberg: %s", n)
			}
			expect := w.expectGroups(t)
			if w.Name == "py.expiry_live" {
				// The gateway has indexed the whole table; now its two
				// oldest snapshots are expired while it runs, and one more
				// snapshot comes. From the log start a consumer must still
				// replay to the table at every retained snapshot.
				tbl := fidOpenCatalog(dir, w.Name)(t)
				hist := fidWalkMain(tbl.Metadata())
				if msg := fidWaitIndexed(t, g, w.Name, hist[len(hist)-1].id); msg != "" {
					t.Fatalf("the gateway cannot index %s: %s", w.Name, msg)
				}
				cmd := exec.CommandContext(ctx, python, "writers/pyiceberg/write_tables.py", dir, "expire_live")
				cmd.Stderr = &stderr
				out, err := cmd.Output()
				if err != nil {
					t.Fatalf("PyIceberg expire_live: %v\n%s\n%s", err, out, stderr.String())
				}
				more := parseWriterOutput(t, out)[0]
				for _, n := range more.Notes {
					t.Logf("PyIceberg: %s", n)
				}
				expect = append(expect, more.expectGroups(t)...)
			}
			fidCheck(t, g, fidelityTable{name: w.Name, topic: w.Name, open: fidOpenCatalog(dir, w.Name), expect: expect})
		})
	}
	// The table whose key column was renamed mid-history, spread over 3
	// partitions by key hash: each key's changes stay in one partition
	// across the rename (written under the new name, hashed by the old).
	t.Run("py.evolve_more_3_partitions", func(t *testing.T) {
		const name = "py.evolve_more"
		tbl := fidOpenCatalog(dir, name)(t)
		data3 := filepath.Join(t.TempDir(), "gateway3")
		fidRegister(t, data3, name, tbl.MetadataLocation())
		g3 := startGateway(t, data3, "", "--partitions", "3")
		fidCheck(t, g3, fidelityTable{name: name, topic: name, open: fidOpenCatalog(dir, name)})
		fidFormatsInCurrentSchema(t, name, tbl.MetadataLocation(), fidOpenCatalog(dir, name))
		parts, _ := fidConsume(t, g3.addr, name)
		keyParts := map[string]map[int32]bool{}
		for p, recs := range parts {
			for _, r := range recs {
				if !bytes.HasPrefix(r.Key, []byte(`{"key_id":`)) {
					t.Fatalf("partition %d offset %d: key %s, want it under the key's current name key_id", p, r.Offset, r.Key)
				}
				if keyParts[string(r.Key)] == nil {
					keyParts[string(r.Key)] = map[int32]bool{}
				}
				keyParts[string(r.Key)][p] = true
			}
		}
		used := map[int32]bool{}
		for k, ps := range keyParts {
			if len(ps) != 1 {
				t.Errorf("key %s has changes in partitions %v, want one", k, ps)
			}
			for p := range ps {
				used[p] = true
			}
		}
		if len(used) < 2 {
			t.Errorf("%d keys in %d partitions: the test spreads too little", len(keyParts), len(used))
		}
	})
}

// TestFidelityIcebergJava writes tables with the Iceberg Java API (the
// Maven project in writers/java, HadoopTables on the local file system)
// and registers them with `lakegw table register`.
func TestFidelityIcebergJava(t *testing.T) {
	t.Parallel()
	java, errJ := exec.LookPath("java")
	mvn, errM := exec.LookPath("mvn")
	if errJ != nil || errM != nil {
		skipOrFailMissing(t, "Java 17+ and Maven")
	}
	classpath := buildJavaWriter(t, mvn)
	dir := t.TempDir()
	out := filepath.Join(dir, "java-tables")
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, java, "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto",
		"-cp", classpath, "lakegw.writers.Main", out)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("Iceberg Java writer: %v\n%s\n%s", err, stdout, stderr.String())
	}
	tables := parseWriterOutput(t, stdout)
	t.Logf("Iceberg Java wrote %d tables in %v", len(tables), time.Since(start).Round(time.Millisecond))

	data := filepath.Join(dir, "gateway")
	for _, w := range tables {
		fidRegister(t, data, "java."+w.Name, w.Metadata)
	}
	g := startGateway(t, data, "")
	for _, w := range tables {
		t.Run(w.Name, func(t *testing.T) {
			fidCheck(t, g, fidelityTable{name: w.Name, topic: "java." + w.Name,
				open: fidOpenAt("java."+w.Name, w.Metadata, "", ""), expect: w.expectGroups(t)})
			if w.Name == "evolve" {
				fidFormatsInCurrentSchema(t, "java."+w.Name, w.Metadata, fidOpenAt("java."+w.Name, w.Metadata, "", ""))
				// A row written before the column level was added (with
				// initial default 7) has it as 7, under the current
				// names, its float 0.2f promoted to double as Iceberg
				// readers read it.
				third := consumeAllOf(t, g.addr, "java.evolve", 3)[2]
				const want = `"after":{"amt":2.63,"key_id":2,"label":"n2/1","qty":3,"price":0.20000000298023224,"addr":{"town":"c2","zip":1002,"country":null},"note":null,"level":7}`
				if !bytes.Contains(third.Value, []byte(want)) {
					t.Errorf("the third row of java.evolve:\n got %s\nwant %s", third.Value, want)
				}
			}
		})
	}
	// The upsert table again, spread over 3 partitions by key hash: every
	// key's changes stay in one partition, in order.
	for _, w := range tables {
		if w.Name != "upsert" {
			continue
		}
		t.Run("upsert_3_partitions", func(t *testing.T) {
			data3 := filepath.Join(dir, "gateway3")
			fidRegister(t, data3, "java."+w.Name, w.Metadata)
			g3 := startGateway(t, data3, "", "--partitions", "3")
			fidCheck(t, g3, fidelityTable{name: w.Name, topic: "java." + w.Name,
				open: fidOpenAt("java."+w.Name, w.Metadata, "", ""), expect: w.expectGroups(t)})
		})
	}
}

// buildJavaWriter builds writers/java once per content (pom and sources)
// into a cache folder under the temp dir, and returns the class path of
// the writer.
func buildJavaWriter(t *testing.T, mvn string) string {
	t.Helper()
	src, err := filepath.Abs("writers/java")
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.New()
	err = filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		if d.IsDir() {
			if rel == "target" {
				return filepath.SkipDir
			}
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", rel, len(data))
		h.Write(data)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	build := filepath.Join(os.TempDir(), "lakegw-java-writer-"+hex.EncodeToString(h.Sum(nil))[:16])
	cpFile := filepath.Join(build, "classpath.txt")
	if cp, err := os.ReadFile(cpFile); err == nil {
		if _, err := os.Stat(filepath.Join(build, "classes", "lakegw", "writers", "Main.class")); err == nil {
			t.Logf("Java writer: cached build %s", build)
			return filepath.Join(build, "classes") + string(os.PathListSeparator) + strings.TrimSpace(string(cp))
		}
	}
	tmp, err := os.MkdirTemp(os.TempDir(), "lakegw-java-writer-build")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(tmp)
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	// Not offline: a fresh machine downloads what it lacks; a warm
	// ~/.m2 makes this a local build (release versions are never
	// re-checked).
	cmd := exec.CommandContext(ctx, mvn, "-B", "-q", "-Dstyle.color=never", "package", "dependency:build-classpath",
		"-Dmdep.outputFile="+filepath.Join(tmp, "classpath.txt"), "-DbuildDir="+tmp)
	cmd.Dir = src
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("mvn package in %s: %v\n%s", src, err, out)
	}
	os.RemoveAll(build)
	if err := os.Rename(tmp, build); err != nil {
		t.Fatal(err)
	}
	t.Logf("Java writer: built in %v", time.Since(start).Round(time.Millisecond))
	cp, err := os.ReadFile(cpFile)
	if err != nil {
		t.Fatal(err)
	}
	return filepath.Join(build, "classes") + string(os.PathListSeparator) + strings.TrimSpace(string(cp))
}

// fidFormatsInCurrentSchema serves the table written at metadata (its
// identifier field renamed to key_id) in each format but debezium-json,
// which fidCheck covers: canal-json and json images and upsert values carry
// exactly the table's current columns, upsert keys the key's new name, and
// the upsert topic materialized by key (a null value deletes) equals
// iceberg-go's read of the table in its current schema.
func fidFormatsInCurrentSchema(t *testing.T, name, metadata string, open func(t *testing.T) *table.Table) {
	tbl := open(t)
	current := tbl.Metadata().CurrentSchema()
	var columns []string
	for _, f := range current.Fields() {
		columns = append(columns, f.Name)
	}
	hist := fidWalkMain(tbl.Metadata())
	for _, format := range []string{"canal-json", "upsert", "json"} {
		t.Run(format, func(t *testing.T) {
			data := filepath.Join(t.TempDir(), "gateway")
			fidRegister(t, data, name, metadata)
			g := startGateway(t, data, "", "--format", format, "--partitions", "2")
			if msg := fidWaitIndexed(t, g, name, hist[len(hist)-1].id); msg != "" {
				t.Fatalf("the gateway cannot index %s: %s", name, msg)
			}
			parts, _ := fidConsume(t, g.addr, name)
			rs := newFidSchema(current)
			live := map[string]map[string]any{}
			for _, recs := range parts {
				for _, r := range recs {
					checkColumns(t, format, r, columns)
					if format != "upsert" {
						continue
					}
					if r.Value == nil {
						delete(live, string(r.Key))
						continue
					}
					dec := json.NewDecoder(bytes.NewReader(r.Value))
					dec.UseNumber()
					var row map[string]any
					if err := dec.Decode(&row); err != nil {
						t.Fatalf("offset %d: %v: %s", r.Offset, err, r.Value)
					}
					live[string(r.Key)] = row
				}
			}
			if format != "upsert" {
				return
			}
			got := map[string]int{}
			for _, row := range live {
				fr, err := rs.jsonRow(row)
				if err != nil {
					t.Fatal(err)
				}
				got[fr.key()]++
			}
			want, err := fidScan(tbl, hist[len(hist)-1], rs)
			if err != nil {
				t.Fatal(err)
			}
			if diff := fidDiff(rs, want, got, 5); diff != "" {
				t.Errorf("the upsert topic materialized by key differs from the table:\n%s", diff)
			}
		})
	}
}
