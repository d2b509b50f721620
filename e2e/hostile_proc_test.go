package e2e

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHostileSecondGatewayOnOneDataDir reproduces row 8 of issue 12: a
// quickstart and a serve on one --data-dir. Before, both ran and one failed
// to persist its offset index ("UNIQUE constraint failed") until restarted;
// now the second exits at once, non-zero, naming the holder's pid, and the
// first keeps serving.
func TestHostileSecondGatewayOnOneDataDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	addr := freeAddr(t)
	first := exec.Command(lakegwBin, "quickstart", "--data-dir", dir, "--listen", addr, "--log-format", "json")
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	firstDone := make(chan error, 1)
	go func() { firstDone <- first.Wait() }()
	t.Cleanup(func() { procStop(t, first, firstDone) })
	cl := waitClient(t, addr)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	out, err := exec.CommandContext(ctx, lakegwBin, "serve", "--data-dir", dir, "--listen", freeAddr(t)).CombinedOutput()
	if err == nil {
		t.Fatalf("a second gateway on %s exited 0:\n%s", dir, out)
	}
	wantPid := "pid " + strconv.Itoa(first.Process.Pid)
	if !strings.Contains(string(out), "in use by another lakegw ("+wantPid) {
		t.Fatalf("the refusal does not name the holder (%s):\n%s", wantPid, out)
	}
	t.Logf("second gateway refused after %v: %s", time.Since(start).Round(time.Millisecond), strings.TrimSpace(string(out)))
	pingCtx, cancelPing := context.WithTimeout(context.Background(), time.Second)
	defer cancelPing()
	if err := cl.Ping(pingCtx); err != nil {
		t.Fatalf("the first gateway does not answer within 1 s after the refusal: %v", err)
	}
	select {
	case err := <-firstDone:
		t.Fatalf("the first gateway exited: %v", err)
	default:
	}
}

// TestHostileRelativeRegistrationReadFromAnotherDirectory reproduces row 11:
// `table register` with a relative metadata path and a relative remap
// target, run in one directory, then a server started in another (the test's
// own). Before, the relative paths were stored as given and the server
// logged "no such file" on every poll; now they are stored absolute and the
// topic serves every record.
func TestHostileRelativeRegistrationReadFromAnotherDirectory(t *testing.T) {
	ctx := context.Background()
	src := t.TempDir()
	w := setupTable(t, src)
	tbl, err := w.cat.LoadTable(ctx, w.ident)
	if err != nil {
		t.Fatal(err)
	}
	// Copy the table's folder elsewhere and remove the original: every read
	// must go through the registration's remap.
	work := t.TempDir()
	orig := filepath.Join(src, "warehouse", "e2e.db", "events")
	if out, err := exec.Command("cp", "-r", orig, filepath.Join(work, "copy")).CombinedOutput(); err != nil {
		t.Fatalf("copy the table: %v\n%s", err, out)
	}
	if err := os.RemoveAll(orig); err != nil {
		t.Fatal(err)
	}
	relMeta := filepath.Join("copy", "metadata", filepath.Base(tbl.MetadataLocation()))
	data := filepath.Join(t.TempDir(), "gateway")
	reg := exec.Command(lakegwBin, "table", "register", topic, relMeta, "--remap-location", tbl.Location()+"=copy",
		"--data-dir", data)
	reg.Dir = work
	if out, err := reg.CombinedOutput(); err != nil {
		t.Fatalf("register with relative paths: %v\n%s", err, out)
	}
	list, err := exec.Command(lakegwBin, "table", "list", "--data-dir", data).CombinedOutput()
	if err != nil || !strings.Contains(string(list), "registered: "+filepath.Join(work, relMeta)) {
		t.Fatalf("the registration is not stored absolute: %v\n%s", err, list)
	}
	wd, err := os.Getwd()
	if err != nil || wd == work {
		t.Fatalf("the server must run in another directory than the registration (%s, %v)", wd, err)
	}
	g := startGateway(t, data, "")
	checkRecords(t, w, consumeAll(t, g.addr, len(w.allRows())))
	if strings.Contains(g.Logs(), "no such file") {
		t.Fatalf("the server could not read a file of the registration:\n%s", g.Logs())
	}
}

// TestHostileDebugListenerPublicAddressAndSecrets reproduces row 12: before,
// `--debug-listen 0.0.0.0:16060` was accepted silently and
// /debug/pprof/cmdline showed `--catalog-prop s3.secret-access-key=...`.
// Now a non-loopback debug address refuses to start without
// --debug-listen-public, and the secret is in neither the cmdline page nor
// the logs.
func TestHostileDebugListenerPublicAddressAndSecrets(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, lakegwBin, "serve", "--data-dir", dir, "--listen", freeAddr(t),
		"--debug-listen", "0.0.0.0:0").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--debug-listen-public") {
		t.Fatalf("a public debug address: %v, want a refusal naming --debug-listen-public:\n%s", err, out)
	}

	const secret = "HOSTILE-proc-secret-4f1a"
	debugAddr := freeAddr(t)
	g := startGateway(t, dir, "", "--debug-listen", debugAddr,
		"--catalog-prop", "s3.secret-access-key="+secret, "--catalog-prop=s3.region=eu-west-1")
	var body []byte
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get("http://" + debugAddr + "/debug/pprof/cmdline")
		if err == nil {
			body, err = io.ReadAll(resp.Body)
			resp.Body.Close()
			if err == nil && resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("debug listener on %s: %v", debugAddr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if strings.Contains(string(body), secret) || !strings.Contains(string(body), "s3.secret-access-key=[redacted]") {
		t.Fatalf("/debug/pprof/cmdline shows: %q", body)
	}
	if !strings.Contains(string(body), "s3.region=eu-west-1") {
		t.Fatalf("/debug/pprof/cmdline hides a plain property: %q", body)
	}
	logs := g.Logs()
	if strings.Contains(logs, secret) || !strings.Contains(logs, `"s3.secret-access-key":"[redacted]"`) {
		t.Fatalf("the logs show the secret or do not list the redacted property:\n%s", logs)
	}
}

// TestHostileFileModes reproduces row 13: state.db and batch-cache segments
// (table rows) were 0644 in 0755 directories. Now the directories lakegw
// creates are 0700 and state.db, its -wal and -shm, the lock file and every
// batch-cache segment 0600.
func TestHostileFileModes(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	w := setupTable(t, dir)
	g := startGateway(t, dir, "")
	consumeAll(t, g.addr, len(w.allRows()))
	segs, err := filepath.Glob(filepath.Join(dir, "batch-cache", "*.batches"))
	if err != nil || len(segs) == 0 {
		t.Fatalf("no batch-cache segments after a full read: %v", err)
	}
	want := map[string]os.FileMode{
		dir:                                0o700,
		filepath.Join(dir, "batch-cache"):  0o700,
		filepath.Join(dir, "state.db"):     0o600,
		filepath.Join(dir, "state.db-wal"): 0o600,
		filepath.Join(dir, "state.db-shm"): 0o600,
		filepath.Join(dir, "lakegw.lock"):  0o600,
	}
	for _, s := range segs {
		want[s] = 0o600
	}
	hnetRequireHealthy(t, g, "", "after a full read")
	for path, mode := range want {
		st, err := os.Stat(path)
		if err != nil {
			t.Errorf("%v", err)
			continue
		}
		if st.Mode().Perm() != mode {
			t.Errorf("%s: mode %#o, want %#o", path, st.Mode().Perm(), mode)
		}
	}
}

// procStop ends a process this file started, by SIGTERM, and requires a
// clean exit.
func procStop(t *testing.T, cmd *exec.Cmd, done <-chan error) {
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return
	}
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("gateway pid %d did not exit cleanly: %v", cmd.Process.Pid, err)
		}
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		t.Errorf("gateway pid %d did not stop within 10s of SIGTERM", cmd.Process.Pid)
	}
}
