package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lakegw/lakegw/lake"
	"github.com/lakegw/lakegw/quickstart"
)

// TestFlink runs the Maven project e2e/flink (Flink 2.2 jobs on a local
// MiniCluster, and the Java kafka-clients consumer) against the built
// gateway. This test owns the lake: it writes the tables (the quickstart
// demo's merge-on-read position deletes, plus equality deletes and
// equality-delete upserts), starts lakegw, and answers the Java tests on a
// small HTTP control endpoint: the table's rows as iceberg-go's scanner reads
// them (the oracle every Java test compares with), the main-branch history,
// new commits and rollbacks on request, and which Kafka APIs the Java
// clients called (all their traffic passes a counting proxy, announced as
// the gateway's advertised listener).
//
// It needs java (17+) and mvn. Without them it is skipped, unless CI=true or
// LAKEGW_E2E_FLINK=1, where it fails saying what is missing.
// LAKEGW_E2E_FLINK=0 skips it. `make e2e-flink` runs it alone.
// needJava skips t (or, in CI or with LAKEGW_E2E_FLINK=1, fails it) when
// the Java and Maven the Flink/Java tests run on are missing.
func needJava(t *testing.T) {
	t.Helper()
	mode := os.Getenv("LAKEGW_E2E_FLINK")
	if mode == "0" {
		t.Skip("LAKEGW_E2E_FLINK=0")
	}
	required := mode == "1" || os.Getenv("CI") == "true"
	var missing []string
	for _, tool := range []string{"java", "mvn"} {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) > 0 {
		msg := fmt.Sprintf("the Flink/Java e2e tests need %s on PATH (a JDK 17+ and Maven 3.8+: "+
			"apt-get install openjdk-17-jdk-headless maven); set LAKEGW_E2E_FLINK=0 to skip them", strings.Join(missing, " and "))
		if required {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	if testing.Short() && !required {
		t.Skip("-short")
	}
}

func TestFlink(t *testing.T) {
	needJava(t)
	ctx := context.Background()
	dir := t.TempDir()
	cat, err := lake.OpenCatalog(ctx, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctl := newFlinkControl(t, cat)
	ctl.setup(ctx)
	writeRenamedTable(t, cat)

	proxy := startCountingProxy(t)
	ctl.gw = startGateway(t, dir, proxy.target, "--advertised-listener", proxy.addr)
	ctl.restart = func() *gateway { return startGateway(t, dir, proxy.target, "--advertised-listener", proxy.addr) }
	ctlAddr := ctl.serve()

	args := []string{"-Dlakegw.bootstrap=" + proxy.addr, "-Dlakegw.control=http://" + ctlAddr}
	if only := os.Getenv("LAKEGW_E2E_FLINK_TEST"); only != "" {
		args = append(args, "-Dtest="+only)
	}
	runJavaTests(t, args, func() string { return tailLines(ctl.logs(), 80) },
		func(took time.Duration) {
			t.Logf("mvn test took %v; Kafka APIs the Java clients called (through the proxy): %s", took.Round(time.Second), proxy.summary())
		})
}

// runJavaTests runs the Maven project's tests (e2e/flink) with the system
// properties args, within what is left of t's deadline; logs says what the
// gateways logged last, for a failure; done reports the run's time.
func runJavaTests(t *testing.T, props []string, logs func() string, done func(took time.Duration)) {
	t.Helper()
	ctx := context.Background()
	// Maven gets what is left of the test's deadline, less time to report.
	budget := 15 * time.Minute
	if d, ok := t.Deadline(); ok {
		budget = min(budget, time.Until(d)-45*time.Second)
	}
	if budget < time.Minute {
		t.Fatalf("only %v left of the test deadline: run with -timeout 20m or more", budget)
	}
	mctx, cancel := context.WithTimeout(ctx, budget)
	defer cancel()
	work := t.TempDir()
	args := append([]string{"-B", "-e", "-ntp", "test",
		"-DbuildDir=" + filepath.Join(work, "target"),
		"-Dlakegw.workdir=" + filepath.Join(work, "flink"),
	}, props...)
	if os.Getenv("CI") == "true" {
		args = append(args, "-Dstyle.color=never")
	}
	cmd := exec.CommandContext(mctx, "mvn", args...)
	cmd.Dir = "flink"
	// On timeout, kill Maven with its forked test JVM: its own process group.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatalf("start mvn: %v", err)
	}
	var tail []string
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		t.Log(line)
		tail = append(tail, line)
		if len(tail) > 200 {
			tail = tail[1:]
		}
	}
	err = cmd.Wait()
	done(time.Since(start))
	if mctx.Err() != nil {
		t.Fatalf("mvn test did not finish within %v and was killed; gateway logs:\n%s", budget, logs())
	}
	if err != nil {
		t.Fatalf("mvn test failed: %v (its output is above; the last gateway logs follow)\n%s", err, logs())
	}
}

func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// flinkTable is one table the Java tests read, and how it is served: each
// format the Flink connectors read, and each compression codec the Java
// client decompresses (and checks the CRC of).
type flinkTable struct {
	name  string             // ns.table = topic
	props iceberg.Properties // lakegw.* overrides
	seed  uint64
	first int // initial orders
	steps int // demo snapshots after the first; every third is an equality-delete snapshot
	demo  *quickstart.Demo
}

var flinkTables = []*flinkTable{
	{name: "flink.orders_dbz", seed: 11, first: 30, steps: 9},
	{name: "flink.orders_canal", props: iceberg.Properties{"lakegw.format": "canal-json", "lakegw.compression": "lz4"}, seed: 12, first: 30, steps: 9},
	{name: "flink.orders_upsert", props: iceberg.Properties{"lakegw.format": "upsert", "lakegw.partitions": "2", "lakegw.compression": "zstd"}, seed: 13, first: 30, steps: 9},
	{name: "flink.orders_live", seed: 14, first: 20, steps: 3},
	{name: "flink.orders_ckpt", props: iceberg.Properties{"lakegw.partitions": "2", "lakegw.compression": "snappy"}, seed: 15, first: 250, steps: 12},
	{name: "flink.orders_client", props: iceberg.Properties{"lakegw.compression": "gzip"}, seed: 16, first: 20, steps: 6},
}

type flinkControl struct {
	t   *testing.T
	cat catalog.Catalog
	gw  *gateway
	// restart starts the gateway again on the same data directory and
	// address (after /kill9).
	restart func() *gateway
	mu      sync.Mutex // one commit at a time
	tables  map[string]*flinkTable
	eqN     map[string]int
}

func newFlinkControl(t *testing.T, cat catalog.Catalog) *flinkControl {
	c := &flinkControl{t: t, cat: cat, tables: map[string]*flinkTable{}, eqN: map[string]int{}}
	for _, ft := range flinkTables {
		c.tables[ft.name] = ft
	}
	return c
}

func identOf(name string) table.Identifier { return strings.SplitN(name, ".", 2) }

// setup creates every table with its properties and writes its history:
// demo snapshots (inserts, updates and deletes by position) with an
// equality-delete snapshot (deletes and upserts by key) every third step.
func (c *flinkControl) setup(ctx context.Context) {
	t := c.t
	if err := c.cat.CreateNamespace(ctx, table.Identifier{"flink"}, nil); err != nil {
		t.Fatal(err)
	}
	for _, ft := range flinkTables {
		props := iceberg.Properties{
			"format-version":    "2",
			"write.delete.mode": "merge-on-read",
			"write.update.mode": "merge-on-read",
			"write.merge.mode":  "merge-on-read",
		}
		maps.Copy(props, ft.props)
		if _, err := c.cat.CreateTable(ctx, identOf(ft.name), quickstart.OrdersSchema(), catalog.WithProperties(props)); err != nil {
			t.Fatalf("create %s: %v", ft.name, err)
		}
		ft.demo = quickstart.NewDemo(c.cat, zerolog.Nop(), quickstart.DemoOptions{
			Table: identOf(ft.name), Seed: ft.seed, InitialOrders: ft.first,
		})
		if _, err := ft.demo.Step(ctx); err != nil {
			t.Fatalf("%s: first snapshot: %v", ft.name, err)
		}
		for i := 1; i <= ft.steps; i++ {
			if _, err := c.step(ctx, ft, i%3 == 0); err != nil {
				t.Fatalf("%s: step %d: %v", ft.name, i, err)
			}
		}
	}
}

// step commits one snapshot: a demo step, or an equality-delete step.
func (c *flinkControl) step(ctx context.Context, ft *flinkTable, eq bool) (*table.Snapshot, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if eq {
		return c.eqStep(ctx, ft)
	}
	if _, err := ft.demo.Step(ctx); err != nil {
		return nil, err
	}
	tbl, err := c.cat.LoadTable(ctx, identOf(ft.name))
	if err != nil {
		return nil, err
	}
	return tbl.CurrentSnapshot(), nil
}

// eqStep deletes two live orders and rewrites two others (a new status and
// note) with equality deletes on order_id, as Flink's and Spark's upsert
// writers do: one RowDelta of an equality delete file and a data file of the
// new versions. The gateway must derive two deletes and two updates.
func (c *flinkControl) eqStep(ctx context.Context, ft *flinkTable) (*table.Snapshot, error) {
	c.eqN[ft.name]++
	n := c.eqN[ft.name]
	live, err := ft.demo.LiveRows(ctx)
	if err != nil {
		return nil, err
	}
	ids := slices.Sorted(maps.Keys(live))
	if len(ids) < 8 {
		return nil, fmt.Errorf("%s has only %d live orders", ft.name, len(ids))
	}
	// Spread the picks over the table, different ones each time.
	pick := func(i int) int64 { return ids[(n*7+i*len(ids)/4)%len(ids)] }
	deleted := []int64{pick(0), pick(1)}
	var updated []quickstart.Order
	now := time.Now().UTC().Truncate(time.Microsecond)
	for _, id := range []int64{pick(2), pick(3)} {
		o := live[id]
		o.Status = quickstart.StatusShipped
		note := fmt.Sprintf("upserted by equality delete #%d", n)
		o.Note = &note
		o.UpdatedAt = now
		updated = append(updated, o)
	}
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		tbl, err := c.cat.LoadTable(ctx, identOf(ft.name))
		if err != nil {
			return nil, err
		}
		keySchema, err := tbl.Schema().Select(true, "order_id")
		if err != nil {
			return nil, err
		}
		keyArrow, err := table.SchemaToArrowSchema(keySchema, nil, true, false)
		if err != nil {
			return nil, err
		}
		kb := array.NewRecordBuilder(memory.DefaultAllocator, keyArrow)
		for _, id := range deleted {
			kb.Field(0).(*array.Int64Builder).Append(id)
		}
		for _, o := range updated {
			kb.Field(0).(*array.Int64Builder).Append(o.OrderID)
		}
		keys := kb.NewRecordBatch()
		kb.Release()
		tx := tbl.NewTransaction()
		eqFiles, err := tx.WriteEqualityDeletes(ctx, []int{1}, func(yield func(arrow.RecordBatch, error) bool) { yield(keys, nil) })
		if err != nil {
			return nil, fmt.Errorf("write equality deletes: %w", err)
		}
		sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
		if err != nil {
			return nil, err
		}
		rec, err := ordersRecord(sc, updated)
		if err != nil {
			return nil, err
		}
		var dataFiles []iceberg.DataFile
		for f, err := range table.WriteRecords(ctx, tbl, sc, func(yield func(arrow.RecordBatch, error) bool) { yield(rec, nil) }) {
			if err != nil {
				return nil, fmt.Errorf("write data: %w", err)
			}
			dataFiles = append(dataFiles, f)
		}
		rd := tx.NewRowDelta(nil)
		rd.AddRows(dataFiles...)
		rd.AddDeletes(eqFiles...)
		if err := rd.Commit(ctx); err != nil {
			return nil, fmt.Errorf("row delta: %w", err)
		}
		next, err := tx.Commit(ctx)
		if err != nil {
			lastErr = err
			time.Sleep(50 * time.Millisecond)
			continue
		}
		snap := next.CurrentSnapshot()
		if snap.Summary == nil || snap.Summary.Properties["added-equality-delete-files"] != "1" {
			return nil, fmt.Errorf("snapshot %d has no equality delete file: summary %+v", snap.SnapshotID, snap.Summary)
		}
		return snap, nil
	}
	return nil, fmt.Errorf("equality delete commit: %w", lastErr)
}

// ordersRecord encodes orders in the table's Arrow schema.
func ordersRecord(sc *arrow.Schema, orders []quickstart.Order) (arrow.RecordBatch, error) {
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for _, o := range orders {
		for i, f := range sc.Fields() {
			fb := b.Field(i)
			switch f.Name {
			case "order_id":
				fb.(*array.Int64Builder).Append(o.OrderID)
			case "customer":
				fb.(*array.StringBuilder).Append(o.Customer)
			case "product":
				fb.(*array.StringBuilder).Append(o.Product)
			case "status":
				fb.(*array.StringBuilder).Append(o.Status)
			case "amount":
				fb.(*array.Decimal128Builder).Append(decimal128.FromI64(o.AmountCents))
			case "quantity":
				fb.(*array.Int32Builder).Append(o.Quantity)
			case "created_at":
				fb.(*array.TimestampBuilder).Append(arrow.Timestamp(o.CreatedAt.UnixMicro()))
			case "updated_at":
				fb.(*array.TimestampBuilder).Append(arrow.Timestamp(o.UpdatedAt.UnixMicro()))
			case "note":
				if o.Note == nil {
					fb.AppendNull()
				} else {
					fb.(*array.StringBuilder).Append(*o.Note)
				}
			default:
				return nil, fmt.Errorf("unexpected column %q", f.Name)
			}
		}
	}
	return b.NewRecordBatch(), nil
}

// ctlRow is an order as the Java tests compare it: the decimal as its plain
// string, timestamps as microseconds since the epoch.
type ctlRow struct {
	OrderID     int64   `json:"order_id"`
	Customer    string  `json:"customer"`
	Product     string  `json:"product"`
	Status      string  `json:"status"`
	Amount      string  `json:"amount"`
	Quantity    int32   `json:"quantity"`
	CreatedAtUs int64   `json:"created_at_us"`
	UpdatedAtUs int64   `json:"updated_at_us"`
	Note        *string `json:"note"`
}

func toCtlRow(o quickstart.Order) ctlRow {
	sign, cents := "", o.AmountCents
	if cents < 0 {
		sign, cents = "-", -cents
	}
	return ctlRow{
		OrderID: o.OrderID, Customer: o.Customer, Product: o.Product, Status: o.Status,
		Amount:   fmt.Sprintf("%s%d.%02d", sign, cents/100, cents%100),
		Quantity: o.Quantity, CreatedAtUs: o.CreatedAt.UnixMicro(), UpdatedAtUs: o.UpdatedAt.UnixMicro(), Note: o.Note,
	}
}

type ctlSnapshot struct {
	SnapshotID     int64 `json:"snapshot_id"`
	SequenceNumber int64 `json:"sequence_number"`
	TimestampMs    int64 `json:"timestamp_ms"`
}

func toCtlSnapshot(s *table.Snapshot) ctlSnapshot {
	return ctlSnapshot{SnapshotID: s.SnapshotID, SequenceNumber: s.SequenceNumber, TimestampMs: s.TimestampMs}
}

// logs are the logs of the gateway running now.
func (c *flinkControl) logs() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gw.Logs()
}

// serve starts the control endpoint and returns its address.
//
//	GET  /rows?table=T            {"snapshot": {...}, "rows": [...]}: an iceberg-go scan of T's current snapshot
//	GET  /snapshots?table=T       the main branch's history, oldest first
//	POST /step?table=T[&eq=1]     commit a demo (or equality-delete) snapshot; answers the snapshot
//	POST /rollback?table=T&to=ID  roll T's main branch back to snapshot ID
//	POST /kill9[?down_ms=N]       kill the gateway with SIGKILL and start it again on the same data (N ms later)
//	GET  /apis                    {"OffsetForLeaderEpoch v4": n, ...}: requests the Java clients sent
func (c *flinkControl) serve() string {
	mux := http.NewServeMux()
	handle := func(path string, fn func(ctx context.Context, ft *flinkTable, q map[string]string) (any, error)) {
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			q := map[string]string{}
			for k, v := range r.URL.Query() {
				q[k] = v[0]
			}
			ft := c.tables[q["table"]]
			if ft == nil && path != "/apis" && path != "/scan" && path != "/kill9" {
				http.Error(w, "unknown table "+q["table"], http.StatusNotFound)
				return
			}
			out, err := fn(r.Context(), ft, q)
			if err != nil {
				c.t.Logf("control %s %s: %v", r.Method, r.URL, err)
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(out)
		})
	}
	handle("/rows", func(ctx context.Context, ft *flinkTable, _ map[string]string) (any, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		tbl, err := c.cat.LoadTable(ctx, identOf(ft.name))
		if err != nil {
			return nil, err
		}
		live, err := ft.demo.LiveRows(ctx)
		if err != nil {
			return nil, err
		}
		rows := make([]ctlRow, 0, len(live))
		for _, id := range slices.Sorted(maps.Keys(live)) {
			rows = append(rows, toCtlRow(live[id]))
		}
		return map[string]any{"snapshot": toCtlSnapshot(tbl.CurrentSnapshot()), "rows": rows}, nil
	})
	handle("/scan", func(ctx context.Context, _ *flinkTable, q map[string]string) (any, error) {
		// An iceberg-go scan of this 20-row table once hung for the whole
		// of the Java client's two minutes (CI, with Flink and the
		// gateway busy on both cores): bounded attempts, and the
		// goroutines of a stuck one in the log, so that a next hang says
		// where.
		type scanned struct {
			rows []map[string]any
			err  error
		}
		var err error
		for attempt := 1; attempt <= 3; attempt++ {
			actx, cancel := context.WithTimeout(ctx, 30*time.Second)
			done := make(chan scanned, 1)
			// Its own goroutine, so that a scan deaf to its context is
			// still reported; it ends with the scan (or the test).
			go func() {
				rows, err := scanCurrentSchema(actx, c.cat, q["table"])
				done <- scanned{rows, err}
			}()
			var r scanned
			select {
			case r = <-done:
			case <-actx.Done():
				r.err = fmt.Errorf("scan of %s: %w", q["table"], actx.Err())
			}
			cancel()
			if err = r.err; err == nil {
				return r.rows, nil
			}
			if ctx.Err() != nil {
				break
			}
			var stacks bytes.Buffer
			_ = pprof.Lookup("goroutine").WriteTo(&stacks, 1)
			c.t.Logf("control /scan of %s, attempt %d: %v; goroutines:\n%s", q["table"], attempt, err, stacks.String())
		}
		return nil, err
	})
	handle("/snapshots", func(ctx context.Context, ft *flinkTable, _ map[string]string) (any, error) {
		tbl, err := c.cat.LoadTable(ctx, identOf(ft.name))
		if err != nil {
			return nil, err
		}
		var out []ctlSnapshot
		for s := tbl.CurrentSnapshot(); s != nil; {
			out = append(out, toCtlSnapshot(s))
			if s.ParentSnapshotID == nil {
				break
			}
			s = tbl.Metadata().SnapshotByID(*s.ParentSnapshotID)
		}
		slices.Reverse(out)
		return out, nil
	})
	handle("/step", func(ctx context.Context, ft *flinkTable, q map[string]string) (any, error) {
		s, err := c.step(ctx, ft, q["eq"] == "1")
		if err != nil {
			return nil, err
		}
		return toCtlSnapshot(s), nil
	})
	handle("/rollback", func(ctx context.Context, ft *flinkTable, q map[string]string) (any, error) {
		to, err := strconv.ParseInt(q["to"], 10, 64)
		if err != nil {
			return nil, err
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		tbl, err := c.cat.LoadTable(ctx, identOf(ft.name))
		if err != nil {
			return nil, err
		}
		tx := tbl.NewTransaction()
		if err := tx.RollbackToSnapshot(to); err != nil {
			return nil, err
		}
		next, err := tx.Commit(ctx)
		if err != nil {
			return nil, err
		}
		return toCtlSnapshot(next.CurrentSnapshot()), nil
	})
	handle("/kill9", func(_ context.Context, _ *flinkTable, q map[string]string) (any, error) {
		down, _ := strconv.Atoi(q["down_ms"])
		c.mu.Lock()
		defer c.mu.Unlock()
		c.gw.kill9()
		time.Sleep(time.Duration(down) * time.Millisecond)
		c.gw = c.restart()
		return map[string]any{"restarted": true}, nil
	})
	handle("/apis", func(context.Context, *flinkTable, map[string]string) (any, error) {
		return proxyCounts.snapshot(), nil
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		c.t.Fatal(err)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	c.t.Cleanup(func() { srv.Close() })
	return ln.Addr().String()
}

// apiCounts counts the requests that passed the proxy, by API and version.
type apiCounts struct {
	mu sync.Mutex
	n  map[string]int
}

func (a *apiCounts) add(key, version int16) {
	name := fmt.Sprintf("key%d", key)
	if req := kmsg.RequestForKey(key); req != nil {
		name = kmsg.NameForKey(key)
	}
	a.mu.Lock()
	a.n[fmt.Sprintf("%s v%d", name, version)]++
	a.mu.Unlock()
}

func (a *apiCounts) snapshot() map[string]int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return maps.Clone(a.n)
}

// proxyCounts is shared by the proxy and the control endpoint.
var proxyCounts = &apiCounts{n: map[string]int{}}

// countingProxy forwards Kafka connections to the gateway and counts the
// requests by API key and version.
type countingProxy struct {
	addr, target string
}

func startCountingProxy(t *testing.T) *countingProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &countingProxy{addr: ln.Addr().String(), target: freeAddr(t)}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	go func() {
		for {
			cl, err := ln.Accept()
			if err != nil {
				return
			}
			srv, err := net.Dial("tcp", p.target)
			if err != nil {
				cl.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, cl, srv)
			mu.Unlock()
			wg.Add(2)
			go func() { // responses
				defer wg.Done()
				io.Copy(cl, srv)
				cl.Close()
			}()
			go func() { // requests, frame by frame
				defer wg.Done()
				defer srv.Close()
				var size [4]byte
				for {
					if _, err := io.ReadFull(cl, size[:]); err != nil {
						return
					}
					n := binary.BigEndian.Uint32(size[:])
					if n > 256<<20 || n < 4 {
						return
					}
					frame := make([]byte, 4+n)
					copy(frame, size[:])
					if _, err := io.ReadFull(cl, frame[4:]); err != nil {
						return
					}
					proxyCounts.add(int16(binary.BigEndian.Uint16(frame[4:])), int16(binary.BigEndian.Uint16(frame[6:])))
					if _, err := srv.Write(frame); err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return p
}

func (p *countingProxy) summary() string {
	m := proxyCounts.snapshot()
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
