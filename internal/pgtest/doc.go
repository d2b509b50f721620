// Package pgtest starts a real PostgreSQL server for tests: a fresh cluster
// in a temporary directory, listening on 127.0.0.1 only, stopped when the
// test ends (and killed with the test process if that dies first). Tests of
// the PostgreSQL state store and of several gateways sharing one use it, so
// their oracle is the server lakegw runs against in production, not a fake.
//
// It finds the server binaries under /usr/lib/postgresql (the Debian
// packages .ci/run installs) or in $LAKEGW_PG_BIN. Run as root, it starts
// the server as the postgres user, which initdb and postgres require.
//
// It imports nothing of lakegw's; only tests and the benchmark (its
// cluster pass, StartServer) import it.
package pgtest
