package e2e

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/lakegw/lakegw/lake"
)

// startRESTCatalog runs Apache Iceberg's REST catalog server (the one of
// the apache/iceberg-rest-fixture image, from Maven Central jars) on a free
// port, backed by a JDBC catalog on SQLite, and returns its URI.
func startRESTCatalog(t *testing.T, warehouse string) string {
	t.Helper()
	for _, tool := range []string{"java", "mvn"} {
		if _, err := exec.LookPath(tool); err != nil {
			skipOrFailMissing(t, tool)
		}
	}
	dir, err := filepath.Abs("restcatalog")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "target", "lib")); err != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
		defer cancel()
		build := exec.CommandContext(ctx, "mvn", "-q", "-B", "package")
		build.Dir = dir
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("building the REST catalog fixture: %v\n%s", err, out)
		}
	}
	addr := freeAddr(t)
	port := addr[strings.LastIndexByte(addr, ':')+1:]
	cmd := exec.Command("java", "-Xmx256m", "-cp", filepath.Join(dir, "target", "lib", "*"), "org.apache.iceberg.rest.RESTCatalogServer")
	cmd.Env = append(os.Environ(),
		"CATALOG_REST_PORT="+port,
		"CATALOG_WAREHOUSE=file://"+warehouse,
		"CATALOG_URI=jdbc:sqlite:file:"+filepath.Join(warehouse, "rest-catalog.db"))
	logs, err := os.Create(filepath.Join(os.TempDir(), "lakegw-rest-catalog.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
	})
	uri := "http://" + addr
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(uri + "/v1/config")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return uri
			}
		}
		if time.Now().After(deadline) {
			out, _ := os.ReadFile(logs.Name())
			t.Fatalf("REST catalog did not start: %v\n%s", err, out)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestServesTablesOfARESTCatalog points lakegw at a real Iceberg REST
// catalog through catalog properties: its tables are topics, and a table
// created while lakegw runs appears without a restart.
func TestServesTablesOfARESTCatalog(t *testing.T) {
	warehouse := t.TempDir()
	uri := startRESTCatalog(t, warehouse)
	ctx := context.Background()
	props := iceberg.Properties{"type": "rest", "uri": uri}
	cat, err := lake.OpenCatalog(ctx, t.TempDir(), props)
	if err != nil {
		t.Fatal(err)
	}
	w := newTableWriterOn(t, cat, "e2e", "events")
	w.appendRows(3)
	w.appendRows(1200)

	g := startGateway(t, t.TempDir(), "", "--catalog-prop", "type=rest", "--catalog-prop", "uri="+uri)
	checkRecords(t, w, consumeAll(t, g.addr, len(w.allRows())))

	// A commit to a served table: the watcher sees the REST catalog's
	// metadata pointer move (read with snapshots=refs) and serves it.
	cl := mustClient(t, g.addr)
	w.appendRows(5)
	deadline := time.Now().Add(15 * time.Second)
	for {
		p := rawFetch(t, cl, "e2e.events", 0, 12)
		if p.ErrorCode == 0 && p.HighWatermark == int64(len(w.allRows())) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a commit to e2e.events never showed (error code %d, hwm %d, want %d)", p.ErrorCode, p.HighWatermark, len(w.allRows()))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if strings.Contains(g.Logs(), "cannot read metadata pointers") {
		t.Fatalf("the gateway could not read the REST catalog's pointers:\n%s", g.Logs())
	}

	// A second table, created while the gateway runs.
	w2 := newTableWriterOn(t, cat, "e2e", "late")
	w2.appendRows(2)
	deadline = time.Now().Add(15 * time.Second)
	for {
		p := rawFetch(t, cl, "e2e.late", 0, 12)
		if p.ErrorCode == 0 && p.HighWatermark == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("table created in the REST catalog never became a topic (last error code %d, hwm %d)", p.ErrorCode, p.HighWatermark)
		}
		time.Sleep(200 * time.Millisecond)
	}
	c2, err := kgo.NewClient(kgo.SeedBrokers(g.addr), kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{"e2e.late": {0: kgo.NewOffset().AtStart()}}))
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	recs := consumeN(t, c2, 2, 15*time.Second)
	if string(recs[0].Key) != fmt.Sprintf(`{"id":%d}`, w2.Snaps[0].Rows[0].ID) {
		t.Fatalf("first record of e2e.late: key %s", recs[0].Key)
	}
}
