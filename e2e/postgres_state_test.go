package e2e

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lakegw/lakegw/internal/pgtest"
)

// The state store on PostgreSQL (issue 21's first step): a restart serves
// byte-identical batches and the committed group offsets, read back from
// the database and not from the data directory.
func TestPostgresStateKeepsOffsetsAcrossRestart(t *testing.T) {
	url := pgtest.Start(t).NewDatabase(t)
	restartKeepsOffsetsBytesAndGroupOffsets(t, "--state", url)
}

// Transactions, their staged batches and the group's offsets live in
// PostgreSQL and survive kill -9 of the gateway: each input record lands
// in the output exactly once.
func TestPostgresStateExactlyOnceAcrossKill9(t *testing.T) {
	url := pgtest.Start(t).NewDatabase(t)
	exactlyOnceAcrossKill9(t, "--state", url)
}

// Until gateways share the work, a second gateway on one PostgreSQL state
// store is refused at start with a message naming the reason, and the
// first one's state is not in its data directory.
func TestPostgresStateRefusesASecondGateway(t *testing.T) {
	url := pgtest.Start(t).NewDatabase(t)
	dir := t.TempDir()
	setupTable(t, dir)
	startGateway(t, dir, "", "--state", url)
	if _, err := os.Stat(filepath.Join(dir, "state.db")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("state.db in the data directory (%v): the state went to SQLite, not PostgreSQL", err)
	}
	out, err := runLakegw(t, 60*time.Second, "serve", "--data-dir", t.TempDir(), "--listen", freeAddr(t), "--state", url)
	if err == nil || !strings.Contains(out, "in use by another gateway") {
		t.Fatalf("second gateway: %v\n%s", err, out)
	}
}

// runLakegw runs lakegw with args to its end, which must come within
// timeout (a server that should have refused to start but serves fails
// the test), and returns its output.
func runLakegw(t *testing.T, timeout time.Duration, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(lakegwBin, args...)
	done := make(chan struct{})
	var out []byte
	var err error
	go func() { out, err = cmd.CombinedOutput(); close(done) }()
	select {
	case <-done:
	case <-time.After(timeout):
		cmd.Process.Kill()
		<-done
		t.Fatalf("lakegw %s kept running:\n%s", strings.Join(args, " "), out)
	}
	return string(out), err
}
