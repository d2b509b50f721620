package pgtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
)

// Server is a running PostgreSQL cluster.
type Server struct {
	port int
	dbs  atomic.Int64
}

// Start starts a PostgreSQL server for tb and stops it in tb's cleanup. It
// fails tb when the binaries are missing: a test that needs PostgreSQL
// must not pass without it.
func Start(tb testing.TB) *Server {
	tb.Helper()
	s, stop, err := StartServer()
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	tb.Cleanup(stop)
	return s
}

// StartServer starts a PostgreSQL server outside a test (the benchmark's
// cluster pass); stop stops it and removes its files.
func StartServer() (s *Server, stop func(), err error) {
	bin, err := binDir()
	if err != nil {
		return nil, nil, fmt.Errorf("%w (install the postgresql package, or set LAKEGW_PG_BIN)", err)
	}
	cred, err := serverCredential()
	if err != nil {
		return nil, nil, err
	}
	// Not a test's TempDir: its parents are the test's alone (0700), and
	// the server may run as another user.
	dir, err := os.MkdirTemp("", "lakegw-pg-")
	if err != nil {
		return nil, nil, err
	}
	removeDir := func() { os.RemoveAll(dir) }
	if cred != nil {
		if err := os.Chown(dir, int(cred.Uid), int(cred.Gid)); err != nil {
			removeDir()
			return nil, nil, err
		}
	}
	data := filepath.Join(dir, "data")
	initdb := exec.Command(filepath.Join(bin, "initdb"), "-D", data, "-U", "postgres", "--auth=trust", "--no-sync", "-E", "UTF8", "--locale=C")
	initdb.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	if out, err := initdb.CombinedOutput(); err != nil {
		removeDir()
		return nil, nil, fmt.Errorf("initdb: %w\n%s", err, out)
	}
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		port, err := freePort()
		if err != nil {
			removeDir()
			return nil, nil, err
		}
		s, stopServer, err := start(bin, dir, data, port, cred)
		if err == nil {
			return s, func() { stopServer(); removeDir() }, nil
		}
		lastErr = err // most likely the port was taken meanwhile
	}
	removeDir()
	return nil, nil, lastErr
}

func start(bin, dir, data string, port int, cred *syscall.Credential) (*Server, func(), error) {
	logPath := filepath.Join(dir, fmt.Sprintf("server-%d.log", port))
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, nil, err
	}
	if cred != nil {
		if err := logFile.Chown(int(cred.Uid), int(cred.Gid)); err != nil {
			logFile.Close()
			return nil, nil, err
		}
	}
	cmd := exec.Command(filepath.Join(bin, "postgres"), "-D", data, "-p", strconv.Itoa(port), "-h", "127.0.0.1",
		"-k", dir, "-c", "fsync=off", "-c", "max_connections=200", "-c", "shared_buffers=32MB")
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Pdeathsig: a test process killed by its timeout takes the server with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, nil, fmt.Errorf("start postgres: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); logFile.Close() }()
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGQUIT) // immediate shutdown: the data is thrown away
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}
	s := &Server{port: port}
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := s.ping()
		if err == nil {
			return s, stop, nil
		}
		select {
		case werr := <-exited:
			log, _ := os.ReadFile(logPath)
			return nil, nil, fmt.Errorf("postgres exited (%v): %s", werr, log)
		default:
		}
		if time.Now().After(deadline) {
			stop()
			log, _ := os.ReadFile(logPath)
			return nil, nil, fmt.Errorf("postgres not ready after 30 s: %v\n%s", err, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *Server) ping() error {
	db, err := sql.Open("pgx", s.URL("postgres"))
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	return db.PingContext(ctx)
}

// URL is the connection URL of database db on s.
func (s *Server) URL(db string) string {
	return fmt.Sprintf("postgres://postgres@127.0.0.1:%d/%s?sslmode=disable", s.port, db)
}

// Port is the server's TCP port on 127.0.0.1.
func (s *Server) Port() int { return s.port }

// NewDatabase creates an empty database and returns its URL: tests sharing
// one server do not see each other's tables.
func (s *Server) NewDatabase(tb testing.TB) string {
	tb.Helper()
	url, err := s.CreateDatabase(context.Background())
	if err != nil {
		tb.Fatalf("pgtest: %v", err)
	}
	return url
}

// CreateDatabase creates an empty database and returns its URL.
func (s *Server) CreateDatabase(ctx context.Context) (string, error) {
	name := fmt.Sprintf("t%d", s.dbs.Add(1))
	db, err := sql.Open("pgx", s.URL("postgres"))
	if err != nil {
		return "", err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		return "", fmt.Errorf("create database %s: %w", name, err)
	}
	return s.URL(name), nil
}

// binDir is the directory of initdb and postgres: $LAKEGW_PG_BIN, or the
// newest Debian install.
func binDir() (string, error) {
	if d := os.Getenv("LAKEGW_PG_BIN"); d != "" {
		return d, nil
	}
	found, _ := filepath.Glob("/usr/lib/postgresql/*/bin/postgres")
	if len(found) == 0 {
		if p, err := exec.LookPath("postgres"); err == nil {
			return filepath.Dir(p), nil
		}
		return "", errors.New("no PostgreSQL server binaries under /usr/lib/postgresql or on PATH")
	}
	sort.Slice(found, func(i, j int) bool { return pgVersion(found[i]) < pgVersion(found[j]) })
	return filepath.Dir(found[len(found)-1]), nil
}

func pgVersion(binPath string) int {
	// /usr/lib/postgresql/<version>/bin/postgres
	v, _ := strconv.Atoi(strings.Split(strings.TrimPrefix(binPath, "/usr/lib/postgresql/"), "/")[0])
	return v
}

// serverCredential is the user the server runs as: postgres when the test
// runs as root (PostgreSQL refuses root), else the test's own (nil).
func serverCredential() (*syscall.Credential, error) {
	if os.Geteuid() != 0 {
		return nil, nil
	}
	u, err := user.Lookup("postgres")
	if err != nil {
		return nil, fmt.Errorf("running as root needs a postgres user to start the server as: %w", err)
	}
	uid, err := strconv.Atoi(u.Uid)
	if err != nil {
		return nil, fmt.Errorf("postgres uid %q: %w", u.Uid, err)
	}
	gid, err := strconv.Atoi(u.Gid)
	if err != nil {
		return nil, fmt.Errorf("postgres gid %q: %w", u.Gid, err)
	}
	return &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}, nil
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
