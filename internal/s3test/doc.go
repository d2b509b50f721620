// Package s3test starts a real S3-compatible server for tests: Versity's
// S3 gateway (versitygw, Apache-2.0) on its posix backend, with a fresh
// backing directory, listening on 127.0.0.1 only, with its own access key,
// stopped when the test ends (and killed with the test process if that
// dies first). Tests of a lake on object storage use it, so their oracle
// is an S3 server speaking the real protocol (SigV4, ranged GETs,
// multipart uploads, listings), not a fake inside the test process.
//
// The server is built once per version with `go install` from the Go
// module proxy and kept under the user's cache directory
// ($XDG_CACHE_HOME/lakegw-s3 or ~/.cache/lakegw-s3); LAKEGW_S3_BIN names a
// binary to use instead. A test that cannot build or start it fails: it
// must not pass without the server it asked for.
//
// It imports nothing of lakegw's; only tests import it.
package s3test
