package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// dataDirLockFile is the file in the data dir whose flock marks the gateway
// that owns the directory. Two gateways on one state store both extend the
// offset index of every topic, and one of them fails with a UNIQUE
// constraint and never recovers: the second must not start.
const dataDirLockFile = "lakegw.lock"

// dataDirLock is a held lock on a data dir; the kernel drops it when the
// process ends, however it ends, so a crash leaves no stale lock behind.
type dataDirLock struct {
	f *os.File
}

// lockDataDir creates dir (0700) if needed and takes its lock without
// waiting, writing this process's pid into the lock file so that the
// refusal of a second gateway can name the holder.
func lockDataDir(dir string) (*dataDirLock, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("data dir %s: %w", dir, err)
	}
	path := filepath.Join(dir, dataDirLockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("data dir lock %s: %w", path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		holder := lockHolder(f)
		f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			return nil, fmt.Errorf("data dir %s is in use by another lakegw (pid %s holds %s): one gateway per --data-dir",
				dir, holder, path)
		}
		return nil, fmt.Errorf("data dir lock %s: %w", path, err)
	}
	if err := writePid(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("data dir lock %s: %w", path, err)
	}
	return &dataDirLock{f: f}, nil
}

func writePid(f *os.File) error {
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return err
}

// lockHolder reads the pid the holder wrote; "unknown" in the instant
// between its lock and its write.
func lockHolder(f *os.File) string {
	buf := make([]byte, 32)
	n, _ := f.ReadAt(buf, 0)
	pid := strings.TrimSpace(string(buf[:n]))
	if _, err := strconv.Atoi(pid); err != nil {
		return "unknown"
	}
	return pid
}

// release drops the lock. The file stays: removing it would let a third
// process lock a new file while a second still waits on the old one.
func (l *dataDirLock) release() error {
	return errors.Join(unix.Flock(int(l.f.Fd()), unix.LOCK_UN), l.f.Close())
}
