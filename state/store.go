package state

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	_ "modernc.org/sqlite" // pure-Go SQLite driver: no cgo on the build machines
)

// Store is the gateway's state store. It is safe for concurrent use.
type Store struct {
	db    *sql.DB
	d     *dialect
	saves *offsetSaves // group commit of committed offsets
	// gatewayLock holds PostgreSQL's session lock of the serving gateway
	// (LockForGateway); nil otherwise.
	gatewayLock *sql.Conn
	// claims fences the writes of committed offsets by group shard when
	// gateways share the store (shard_claims.go).
	claims shardClaims
}

const sqliteSchema = `
CREATE TABLE IF NOT EXISTS topic_state (
	topic        TEXT PRIMARY KEY,
	table_uuid   TEXT NOT NULL,
	partitions   INTEGER NOT NULL,
	epochs       TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS segments (
	topic           TEXT NOT NULL,
	partition       INTEGER NOT NULL,
	base_offset     INTEGER NOT NULL,
	snapshot_id     INTEGER NOT NULL,
	sequence_number INTEGER NOT NULL,
	timestamp_ms    INTEGER NOT NULL,
	record_count    INTEGER NOT NULL,
	kind            INTEGER NOT NULL DEFAULT 0,
	leader_epoch    INTEGER NOT NULL DEFAULT -1,
	PRIMARY KEY (topic, partition, base_offset, snapshot_id)
);
CREATE TABLE IF NOT EXISTS group_offsets (
	group_id     TEXT NOT NULL,
	topic        TEXT NOT NULL,
	partition    INTEGER NOT NULL,
	offset       INTEGER NOT NULL,
	leader_epoch INTEGER NOT NULL,
	metadata     TEXT NOT NULL,
	commit_ms    INTEGER NOT NULL,
	PRIMARY KEY (group_id, topic, partition)
);
CREATE TABLE IF NOT EXISTS transactions (
	txn_id TEXT PRIMARY KEY,
	record TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS txn_batches (
	txn_id    TEXT NOT NULL,
	n         INTEGER NOT NULL,
	topic     TEXT NOT NULL,
	partition INTEGER NOT NULL,
	first_seq INTEGER NOT NULL,
	last_seq  INTEGER NOT NULL,
	batch     BLOB NOT NULL,
	PRIMARY KEY (txn_id, n)
);
CREATE TABLE IF NOT EXISTS txn_offsets (
	txn_id       TEXT NOT NULL,
	group_id     TEXT NOT NULL,
	topic        TEXT NOT NULL,
	partition    INTEGER NOT NULL,
	offset       INTEGER NOT NULL,
	leader_epoch INTEGER NOT NULL,
	metadata     TEXT NOT NULL,
	PRIMARY KEY (txn_id, group_id, topic, partition)
);
CREATE TABLE IF NOT EXISTS registered_tables (
	ident             TEXT PRIMARY KEY,
	metadata_location TEXT NOT NULL,
	remaps            TEXT NOT NULL
);
`

// Open opens (creating if needed) the SQLite state store at path.
func Open(ctx context.Context, path string) (*Store, error) {
	// Group offsets and the index are the gateway's alone: owner only.
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("state store directory: %w", err)
	}
	if err := createPrivate(path); err != nil {
		return nil, err
	}
	// WAL lets the fetch path read while an index append commits; the busy
	// timeout covers the CLI writing registrations while a server runs.
	// synchronous=FULL syncs the WAL at every commit: an OffsetCommit is
	// acknowledged once its transaction commits, and under NORMAL a power
	// loss could take back commits already acknowledged (WAL mode only
	// syncs at checkpoints). BenchmarkSaveGroupOffsets prices it.
	dsn := "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)&_pragma=synchronous(FULL)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open state store %s: %w", path, err)
	}
	if _, err := db.ExecContext(ctx, sqliteSchema); err != nil {
		db.Close()
		return nil, fmt.Errorf("create state store schema in %s: %w", path, err)
	}
	if err := migrate(ctx, db); err != nil {
		db.Close()
		return nil, fmt.Errorf("migrate state store %s: %w", path, err)
	}
	return &Store{db: db, d: sqliteDialect, saves: newOffsetSaves()}, nil
}

// createPrivate creates the database file with mode 0600 when it does not
// exist yet. SQLite would create it 0644, and gives its -wal and -shm files
// the mode of the database file, so this one mode covers all three.
//
// An existing store that others may read (lakegw before issue 12 left it
// 0644) is made owner-only too: it holds every group's offsets and the
// locations of every registered table, and a mode once wrong would
// otherwise stay wrong for the life of the data directory.
func createPrivate(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("create state store %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("create state store %s: %w", path, err)
	}
	for _, p := range []string{path, path + "-wal", path + "-shm"} {
		st, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("state store %s: %w", p, err)
		}
		if st.Mode().Perm()&0o077 != 0 {
			if err := os.Chmod(p, 0o600); err != nil {
				return fmt.Errorf("make state store %s owner-only (mode %#o): %w", p, st.Mode().Perm(), err)
			}
		}
	}
	return nil
}

// Close closes the store (and releases the gateway lock, if held).
func (s *Store) Close() error {
	var err error
	if s.gatewayLock != nil {
		err = errors.Join(s.releaseGatewayLock(), s.gatewayLock.Close())
	}
	return errors.Join(err, s.db.Close())
}

// inTx runs fn in a transaction, committing on success.
func (s *Store) inTx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := s.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	if err := fn(tx); err != nil {
		return errors.Join(err, tx.Rollback())
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}
