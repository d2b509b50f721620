package procs

import (
	"fmt"
	"io"
	"os/exec"
	"syscall"
	"time"
)

// stopGrace is how long Stop waits after SIGTERM before it kills: lakegw
// and the Kafka broker shut down cleanly well within it.
const stopGrace = 20 * time.Second

// Proc is a server a harness started, running in its own process group.
type Proc struct {
	// Name names the server in errors ("lakegw", "kafka").
	Name string
	// Addr is the address it serves Kafka clients on.
	Addr string
	// Logs is the tail of what it printed.
	Logs *LogTail

	cmd *exec.Cmd
	// done holds the result of cmd.Wait once the process has exited;
	// whoever takes it puts it back, so that every later wait sees it too.
	done chan error
}

// Start starts cmd as the server name on addr, its stdout and stderr kept
// in logs and also copied to echo when echo is not nil. The process gets
// its own process group, so that Stop also stops what it started (the
// Kafka wrapper script's java), and dies with the harness (Pdeathsig), so
// that no server outlives a killed run.
func Start(name, addr string, cmd *exec.Cmd, logs *LogTail, echo io.Writer) (*Proc, error) {
	p := &Proc{Name: name, Addr: addr, Logs: logs, cmd: cmd, done: make(chan error, 1)}
	var out io.Writer = logs
	if echo != nil {
		out = io.MultiWriter(logs, echo)
	}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	// The one goroutine that waits for the process; it ends when the
	// process does, which Stop (or the harness's exit) guarantees.
	go func() { p.done <- cmd.Wait() }()
	return p, nil
}

// Pid is the process whose CPU and memory the harnesses measure. The Kafka
// wrapper script execs java, so for the broker it is java's.
func (p *Proc) Pid() int { return p.cmd.Process.Pid }

// Stop sends SIGTERM to the process group and waits for the process, then
// kills the group if it has not exited within stopGrace. It may be called
// more than once, and on a nil Proc.
func (p *Proc) Stop() {
	if p == nil || p.cmd.Process == nil {
		return
	}
	pgid := p.cmd.Process.Pid // Setpgid: the group is the process's pid
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case err := <-p.done:
		p.done <- err
	case <-time.After(stopGrace):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		p.done <- <-p.done
	}
}
