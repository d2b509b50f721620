package state

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
)

// maxPostgresConns bounds the connections one gateway opens: group commits
// (offset_saves.go) keep the write side to about one at a time, so the rest
// serve index loads and transaction reads.
const maxPostgresConns = 16

// Advisory lock keys, one namespace of PostgreSQL's 64-bit keys: "lakegw"
// in ASCII in the high bytes, the purpose in the low byte.
const (
	migrationLockKey int64 = 0x6c616b656777_0001
	gatewayLockKey   int64 = 0x6c616b656777_0002
)

// IsPostgresURL reports whether a --state value names a PostgreSQL store.
func IsPostgresURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}

// RedactURL is u with its password replaced, for logs and errors.
func RedactURL(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "<unparseable state store URL>"
	}
	return p.Redacted()
}

// OpenPostgres opens the state store in the PostgreSQL database at dsn (a
// postgres:// URL), bringing its schema up to this lakegw's version.
func OpenPostgres(ctx context.Context, dsn string) (*Store, error) {
	where := RedactURL(dsn)
	db, err := sql.Open("pgx", dsn)
	if err != nil {
		return nil, fmt.Errorf("open state store %s: %w", where, err)
	}
	db.SetMaxOpenConns(maxPostgresConns)
	db.SetMaxIdleConns(maxPostgresConns)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("connect to state store %s: %w", where, err)
	}
	if err := migratePostgres(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("state store %s: %w", where, err)
	}
	return &Store{db: db, d: postgresDialect, saves: newOffsetSaves()}, nil
}

// ErrStoreInUse: another gateway serves from the same state store.
var ErrStoreInUse = errors.New("the state store is in use by another gateway")

// LockForGateway makes s the store of one serving gateway until Close: a
// gateway not in a --cluster coordinates every group and transaction
// itself, so a second one on the same store is refused, as a second
// gateway on one --data-dir is. Gateways of a cluster (cluster/) share the
// work instead and take no lock. The SQLite store needs nothing here: the
// data directory's lock covers it.
//
// The lock is PostgreSQL's session lock, held by one connection kept out
// of the pool; it goes with that connection, so a gateway cut off from the
// database for good lets another one start.
func (s *Store) LockForGateway(ctx context.Context) error {
	if s.d != postgresDialect || s.gatewayLock != nil {
		return nil
	}
	conn, err := s.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("lock the state store: %w", err)
	}
	var ok bool
	if err := conn.QueryRowContext(ctx, `SELECT pg_try_advisory_lock($1)`, gatewayLockKey).Scan(&ok); err != nil {
		conn.Close()
		return fmt.Errorf("lock the state store: %w", err)
	}
	if !ok {
		conn.Close()
		return fmt.Errorf("%w: gateways share a state store only when every one runs with --cluster", ErrStoreInUse)
	}
	s.gatewayLock = conn
	return nil
}

// releaseGatewayLock unlocks LockForGateway's lock before its connection
// closes: PostgreSQL drops a closed session's locks only once its backend
// has noticed, so a gateway restarted at once could otherwise be refused.
func (s *Store) releaseGatewayLock() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := s.gatewayLock.ExecContext(ctx, `SELECT pg_advisory_unlock($1)`, gatewayLockKey); err != nil {
		return fmt.Errorf("unlock the state store: %w", err)
	}
	return nil
}
