package s3test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// Version is the versitygw release the tests run, and the key of its cached
// binary: a new version is built once, next to the old.
const Version = "v1.8.0"

const (
	installPath = "github.com/versity/versitygw/cmd/versitygw"
	binName     = "versitygw"
	// Region is the region the server is started with and clients sign for.
	Region = "us-east-1"
	// buildTimeout bounds the one build of a version: about two and a half
	// minutes on two cores with a cold module cache.
	buildTimeout = 15 * time.Minute
)

// Server is a running S3 server.
type Server struct {
	endpoint  string
	accessKey string
	secretKey string
	client    *s3.Client
}

// Start starts an S3 server for tb and stops it in tb's cleanup. It fails
// tb when the server cannot be built or started: a test that needs S3 must
// not pass without it.
func Start(tb testing.TB) *Server {
	tb.Helper()
	bin, err := Binary()
	if err != nil {
		tb.Fatalf("s3test: %v", err)
	}
	dir := tb.TempDir()
	data, meta := filepath.Join(dir, "data"), filepath.Join(dir, "meta")
	for _, d := range []string{data, meta} {
		if err := os.Mkdir(d, 0o700); err != nil {
			tb.Fatalf("s3test: %v", err)
		}
	}
	access, secret := randomHex(tb, 10), randomHex(tb, 20)
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		port, err := freePort()
		if err != nil {
			tb.Fatalf("s3test: %v", err)
		}
		s, err := start(tb, bin, dir, data, meta, port, access, secret)
		if err == nil {
			return s
		}
		lastErr = err // most likely the port was taken meanwhile
	}
	tb.Fatalf("s3test: %v", lastErr)
	return nil
}

func start(tb testing.TB, bin, dir, data, meta string, port int, access, secret string) (*Server, error) {
	logPath := filepath.Join(dir, fmt.Sprintf("server-%d.log", port))
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	// A sidecar directory holds the objects' metadata: the posix backend
	// would otherwise need extended attributes, which tmpfs and some
	// overlay filesystems lack.
	cmd := exec.Command(bin, "--port", "127.0.0.1:"+strconv.Itoa(port), "--region", Region, "--quiet",
		"posix", "--sidecar", meta, data)
	// The credentials go through the environment, not the command line
	// that any process may read.
	cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY_ID="+access, "ROOT_SECRET_ACCESS_KEY="+secret)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	// Pdeathsig: a test process killed by its timeout takes the server with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		logFile.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); logFile.Close() }()
	stop := func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	}
	s := &Server{endpoint: fmt.Sprintf("http://127.0.0.1:%d", port), accessKey: access, secretKey: secret}
	s.client = s.newClient()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := s.ping()
		if err == nil {
			tb.Cleanup(stop)
			return s, nil
		}
		select {
		case werr := <-exited:
			log, _ := os.ReadFile(logPath)
			return nil, fmt.Errorf("versitygw exited (%v): %s", werr, log)
		default:
		}
		if time.Now().After(deadline) {
			stop()
			log, _ := os.ReadFile(logPath)
			return nil, fmt.Errorf("versitygw not ready after 30 s: %v\n%s", err, log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// newClient is an S3 client of s signing with its root key: path-style
// addressing, as on any server without per-bucket host names.
func (s *Server) newClient() *s3.Client {
	cfg := aws.Config{
		Region:      Region,
		Credentials: credentials.NewStaticCredentialsProvider(s.accessKey, s.secretKey, ""),
	}
	return s3.NewFromConfig(cfg, func(o *s3.Options) {
		o.BaseEndpoint = aws.String(s.endpoint)
		o.UsePathStyle = true
	})
}

// ping is a signed ListBuckets: ready means the server checks our key,
// not merely that its port accepts connections.
func (s *Server) ping() error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err := s.client.ListBuckets(ctx, &s3.ListBucketsInput{})
	return err
}

// Endpoint is the server's URL, http://127.0.0.1:PORT.
func (s *Server) Endpoint() string { return s.endpoint }

// AccessKey is the root user's access key id.
func (s *Server) AccessKey() string { return s.accessKey }

// SecretKey is the root user's secret access key.
func (s *Server) SecretKey() string { return s.secretKey }

// Client is an S3 client of the server signed with the root key.
func (s *Server) Client() *s3.Client { return s.client }

// FileIOProps are the iceberg-go S3 FileIO properties that reach this
// server (as catalog properties, or a table's IO properties). Path-style
// addressing is iceberg-go's default for an explicit endpoint.
func (s *Server) FileIOProps() map[string]string {
	return map[string]string{
		"s3.endpoint":          s.endpoint,
		"s3.access-key-id":     s.accessKey,
		"s3.secret-access-key": s.secretKey,
		"s3.region":            Region,
	}
}

// LakeProps are the catalog properties of a lake whose catalog is the SQL
// database at catalogURI (PostgreSQL, through pgx) and whose warehouse is
// warehouse (an s3:// location on s).
func (s *Server) LakeProps(catalogURI, warehouse string) map[string]string {
	props := map[string]string{
		"type":        "sql",
		"uri":         catalogURI,
		"sql.driver":  "pgx",
		"sql.dialect": "postgres",
		"warehouse":   warehouse,
	}
	maps.Copy(props, s.FileIOProps())
	return props
}

// CreateBucket creates bucket name, failing tb if it cannot.
func (s *Server) CreateBucket(tb testing.TB, name string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := s.client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		tb.Fatalf("s3test: create bucket %s: %v", name, err)
	}
}

var (
	buildMu  sync.Mutex
	builtBin string
)

// Binary returns the path of the versitygw binary of Version, building it
// on first use: $LAKEGW_S3_BIN when set, else the cached build. Test
// processes of several packages may ask at once; a lock file lets one of
// them build while the others wait.
func Binary() (string, error) {
	if p := os.Getenv("LAKEGW_S3_BIN"); p != "" {
		return p, nil
	}
	buildMu.Lock()
	defer buildMu.Unlock()
	if builtBin != "" {
		return builtBin, nil
	}
	root, err := cacheRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, binName+"-"+Version)
	bin := filepath.Join(dir, binName)
	if isExecutable(bin) {
		builtBin = bin
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("cache dir: %w", err)
	}
	unlock, err := lockFile(filepath.Join(dir, ".lock"))
	if err != nil {
		return "", err
	}
	defer unlock()
	if isExecutable(bin) { // built by another process while we waited
		builtBin = bin
		return bin, nil
	}
	if err := build(dir, bin); err != nil {
		return "", err
	}
	builtBin = bin
	return bin, nil
}

// build installs versitygw into a fresh directory beside bin and renames
// it into place, so that no one ever runs a half-written binary.
func build(dir, bin string) error {
	goBin, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("building versitygw needs the go command: %w", err)
	}
	tmp, err := os.MkdirTemp(dir, "build-")
	if err != nil {
		return fmt.Errorf("build dir: %w", err)
	}
	defer os.RemoveAll(tmp)
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, goBin, "install", installPath+"@"+Version)
	// Outside any module and workspace, with no GOFLAGS of the caller's:
	// go install pkg@version builds the release as its go.mod pins it.
	cmd.Dir = tmp
	cmd.Env = append(os.Environ(), "GOBIN="+tmp, "GOWORK=off", "GOFLAGS=", "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("go install %s@%s: %w\n%s", installPath, Version, err, out)
	}
	if err := os.Rename(filepath.Join(tmp, binName), bin); err != nil {
		return fmt.Errorf("install versitygw binary: %w", err)
	}
	return nil
}

// cacheRoot is $XDG_CACHE_HOME/lakegw-s3, or ~/.cache/lakegw-s3.
func cacheRoot() (string, error) {
	base, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("no cache directory for the versitygw build: %w", err)
	}
	return filepath.Join(base, "lakegw-s3"), nil
}

func lockFile(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("build lock: %w", err)
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("build lock %s: %w", path, err)
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}

func isExecutable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0
}

func randomHex(tb testing.TB, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		tb.Fatalf("s3test: %v", err)
	}
	return hex.EncodeToString(b)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
