package state

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// postgresMigrations are the PostgreSQL schema's versions in order: the
// store records the last one applied, and a gateway applies the ones after
// it. A released migration is never edited; a change is a new one.
//
// Client-chosen strings (group and transactional ids, commit metadata) are
// bytea: PostgreSQL's text refuses NUL and invalid UTF-8, which the Kafka
// protocol lets through. Every integer a Kafka or Iceberg value lands in is
// bigint where the value is 64-bit.
var postgresMigrations = []string{
	// 1: the tables of the SQLite store as of issue 21.
	`CREATE TABLE topic_state (
		topic        TEXT PRIMARY KEY,
		table_uuid   TEXT NOT NULL,
		partitions   INTEGER NOT NULL,
		epochs       TEXT NOT NULL,
		encoding     TEXT NOT NULL DEFAULT ''
	);
	CREATE TABLE segments (
		id              BIGINT GENERATED ALWAYS AS IDENTITY,
		topic           TEXT NOT NULL,
		partition       INTEGER NOT NULL,
		base_offset     BIGINT NOT NULL,
		snapshot_id     BIGINT NOT NULL,
		sequence_number BIGINT NOT NULL,
		timestamp_ms    BIGINT NOT NULL,
		record_count    BIGINT NOT NULL,
		kind            SMALLINT NOT NULL DEFAULT 0,
		leader_epoch    INTEGER NOT NULL DEFAULT -1,
		PRIMARY KEY (topic, partition, base_offset, snapshot_id)
	);
	CREATE TABLE group_offsets (
		group_id     BYTEA NOT NULL,
		topic        TEXT NOT NULL,
		partition    INTEGER NOT NULL,
		"offset"     BIGINT NOT NULL,
		leader_epoch INTEGER NOT NULL,
		metadata     BYTEA NOT NULL,
		commit_ms    BIGINT NOT NULL,
		PRIMARY KEY (group_id, topic, partition)
	);
	CREATE TABLE transactions (
		txn_id BYTEA PRIMARY KEY,
		record TEXT NOT NULL
	);
	CREATE TABLE txn_batches (
		txn_id    BYTEA NOT NULL,
		n         BIGINT NOT NULL,
		topic     TEXT NOT NULL,
		partition INTEGER NOT NULL,
		first_seq INTEGER NOT NULL,
		last_seq  INTEGER NOT NULL,
		batch     BYTEA NOT NULL,
		PRIMARY KEY (txn_id, n)
	);
	CREATE TABLE txn_offsets (
		txn_id       BYTEA NOT NULL,
		group_id     BYTEA NOT NULL,
		topic        TEXT NOT NULL,
		partition    INTEGER NOT NULL,
		"offset"     BIGINT NOT NULL,
		leader_epoch INTEGER NOT NULL,
		metadata     BYTEA NOT NULL,
		PRIMARY KEY (txn_id, group_id, topic, partition)
	);
	CREATE TABLE registered_tables (
		ident             TEXT PRIMARY KEY,
		metadata_location TEXT NOT NULL,
		remaps            TEXT NOT NULL
	);`,
	// 2: the live gateways (cluster.Registry), by the database's clock;
	// committed offsets by topic, which every gateway pins history with.
	`CREATE TABLE gateways (
		node_id  INTEGER PRIMARY KEY,
		host     TEXT NOT NULL,
		port     INTEGER NOT NULL,
		instance TEXT NOT NULL,
		beat_at  TIMESTAMPTZ NOT NULL
	);
	CREATE INDEX group_offsets_by_topic ON group_offsets (topic);`,
	// 3: which gateway instance coordinates each group shard: the fencing
	// token of committed offsets (shard_claims.go).
	`CREATE TABLE group_shards (
		shard    INTEGER PRIMARY KEY,
		instance TEXT NOT NULL,
		epoch    BIGINT NOT NULL
	);`,
	// 4: the topic defaults each gateway serves with, which must agree.
	`ALTER TABLE gateways ADD COLUMN defaults TEXT NOT NULL DEFAULT '';`,
}

// migratePostgres applies the migrations db has not seen, in one
// transaction under an advisory lock, so gateways starting together apply
// each once.
func migratePostgres(ctx context.Context, db *sql.DB) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	if err := applyMigrations(ctx, tx); err != nil {
		return errors.Join(err, tx.Rollback())
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrate: commit: %w", err)
	}
	return nil
}

func applyMigrations(ctx context.Context, tx *sql.Tx) error {
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, migrationLockKey); err != nil {
		return fmt.Errorf("migrate: lock: %w", err)
	}
	if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS lakegw_schema (version INTEGER NOT NULL)`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	var version int
	err := tx.QueryRowContext(ctx, `SELECT version FROM lakegw_schema`).Scan(&version)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		if _, err := tx.ExecContext(ctx, `INSERT INTO lakegw_schema(version) VALUES(0)`); err != nil {
			return fmt.Errorf("migrate: %w", err)
		}
	case err != nil:
		return fmt.Errorf("migrate: schema version: %w", err)
	}
	if version > len(postgresMigrations) {
		return fmt.Errorf("schema version %d was written by a newer lakegw (this one knows %d): upgrade this gateway",
			version, len(postgresMigrations))
	}
	for v := version; v < len(postgresMigrations); v++ {
		if _, err := tx.ExecContext(ctx, postgresMigrations[v]); err != nil {
			return fmt.Errorf("migrate to schema version %d: %w", v+1, err)
		}
	}
	if _, err := tx.ExecContext(ctx, `UPDATE lakegw_schema SET version = $1`, len(postgresMigrations)); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	return nil
}
