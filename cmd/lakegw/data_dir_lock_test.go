package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestDataDirLockAdmitsOneHolderAndNamesIt(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	first, err := lockDataDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	// flock locks belong to an open file, so a second open in this process
	// conflicts as another process's would.
	if _, err := lockDataDir(dir); err == nil || !strings.Contains(err.Error(), "pid "+strconv.Itoa(os.Getpid())) {
		t.Fatalf("second lock: %v, want a refusal naming pid %d", err, os.Getpid())
	}
	if st, err := os.Stat(dir); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("data dir mode: %v, %v; want 0700", st.Mode(), err)
	}
	if err := first.release(); err != nil {
		t.Fatal(err)
	}
	again, err := lockDataDir(dir)
	if err != nil {
		t.Fatalf("lock after release: %v", err)
	}
	if err := again.release(); err != nil {
		t.Fatal(err)
	}
}
