package procs

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestLogTailKeepsTheBoundedEnd writes far more than the limit and checks
// that the tail stays within it and ends with the last line written.
func TestLogTailKeepsTheBoundedEnd(t *testing.T) {
	lt := NewLogTail(1000, 100, 30)
	var last string
	for i := range 500 {
		last = fmt.Sprintf("line %d\n", i)
		if _, err := lt.Write([]byte(last)); err != nil {
			t.Fatal(err)
		}
		if n := lt.Len(); n > 1000 {
			t.Fatalf("after write %d the tail holds %d bytes, over its limit of 1000", i, n)
		}
	}
	s := lt.String()
	if !strings.HasPrefix(s, "...\n") || len(s) != len("...\n")+30 || !strings.HasSuffix(s, last) {
		t.Errorf("String() = %q: want \"...\\n\" and the last 30 bytes, ending %q", s, last)
	}
	short := NewLogTail(1000, 100, 30)
	if _, err := short.Write([]byte("ok\n")); err != nil {
		t.Fatal(err)
	}
	if s := short.String(); s != "ok\n" {
		t.Errorf("String() of a short log = %q, want it whole", s)
	}
}

// TestProcMeasuresAndStopsItsGroup starts a shell that burns CPU, prints
// without end and has a child, reads its CPU time and RSS from /proc, and
// checks that Stop ends the shell and its child and that the log tail
// stayed bounded.
func TestProcMeasuresAndStopsItsGroup(t *testing.T) {
	addr, err := FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	logs := NewLogTail(64<<10, 8<<10, 4000)
	var echoed counter
	cmd := exec.Command("sh", "-c", `sleep 300 & i=0; while :; do echo "line $i"; i=$((i+1)); done`)
	p, err := Start("spinner", addr, cmd, logs, &echoed)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()

	deadline := time.Now().Add(time.Minute)
	// Wait for the CPU time to show (it counts in 10 ms steps) and for
	// the shell to print four times the tail's limit.
	for CPUSeconds(p.Pid()) <= 0 || echoed.n.Load() < 4*64<<10 {
		if time.Now().After(deadline) {
			t.Fatalf("after a minute: %v CPU seconds, %d bytes printed", CPUSeconds(p.Pid()), echoed.n.Load())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if rss, hwm := MemStat(p.Pid()); rss <= 0 || hwm < rss {
		t.Errorf("MemStat = rss %d, hwm %d: want 0 < rss <= hwm", rss, hwm)
	}
	child := groupMember(t, p.Pid())

	p.Stop()
	p.Stop() // a second Stop must not block
	if n := logs.Len(); n > 64<<10 || n == 0 {
		t.Errorf("the log tail holds %d bytes of the %d printed: want some, at most %d", n, echoed.n.Load(), 64<<10)
	}
	if s := logs.String(); !strings.HasPrefix(s, "...\n") || len(s) != len("...\n")+4000 {
		t.Errorf("String() = %.40q...: want the trimmed tail", s)
	}
	if CPUSeconds(p.Pid()) != 0 {
		t.Errorf("the shell %d still runs after Stop", p.Pid())
	}
	// The child is not ours to reap: it is gone or a zombie of init.
	for !gone(child) {
		if time.Now().After(deadline) {
			t.Fatalf("the shell's child %d still runs after Stop", child)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestWaitKafkaFailsWhenTheProcessExits checks that waiting for a server
// that dies returns its exit and its output rather than waiting out the
// timeout.
func TestWaitKafkaFailsWhenTheProcessExits(t *testing.T) {
	addr, err := FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
	p, err := Start("broken", addr, exec.Command("sh", "-c", "echo cannot bind; exit 3"), NewLogTail(1<<20, 64<<10, 4000), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Stop()
	err = p.WaitKafka(context.Background(), time.Hour)
	if err == nil || !strings.Contains(err.Error(), "broken exited early") || !strings.Contains(err.Error(), "exit status 3") ||
		!strings.Contains(err.Error(), "cannot bind") {
		t.Fatalf("WaitKafka = %v: want the early exit, its status and its output", err)
	}
}

// counter is an echo writer that counts what the process printed.
type counter struct{ n atomic.Int64 }

func (c *counter) Write(b []byte) (int, error) {
	c.n.Add(int64(len(b)))
	return len(b), nil
}

// groupMember returns a process of process group pgid other than pgid
// itself, from /proc.
func groupMember(t *testing.T, pgid int) int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == pgid {
			continue
		}
		if g, ok := statField(pid, 2); ok && g == strconv.Itoa(pgid) { // pgrp, after state and ppid
			return pid
		}
	}
	t.Fatalf("no process of group %d but the shell", pgid)
	return 0
}

// gone reports whether process pid has exited (absent, or a zombie).
func gone(pid int) bool {
	state, ok := statField(pid, 0)
	return !ok || state == "Z"
}

// statField is field i of /proc/<pid>/stat counted after the command name.
func statField(pid, i int) (string, bool) {
	f, ok := statFields(pid)
	if !ok || i >= len(f) {
		return "", false
	}
	return f[i], true
}
