package state

import (
	"context"
	"database/sql"
	"fmt"
)

// addedColumns are the columns added to tables after their first release:
// CREATE TABLE IF NOT EXISTS leaves an older store's tables as they were,
// so these are added to it on open.
var addedColumns = []struct{ table, column, decl string }{
	{"segments", "kind", "INTEGER NOT NULL DEFAULT 0"},
	{"segments", "leader_epoch", "INTEGER NOT NULL DEFAULT -1"},
	{"topic_state", "encoding", "TEXT NOT NULL DEFAULT ''"},
}

// migrate brings a store written by an older lakegw up to the schema.
func migrate(ctx context.Context, db *sql.DB) error {
	for _, c := range addedColumns {
		ok, err := hasColumn(ctx, db, c.table, c.column)
		if err != nil {
			return err
		}
		if ok {
			continue
		}
		if _, err := db.ExecContext(ctx, fmt.Sprintf(`ALTER TABLE %s ADD COLUMN %s %s`, c.table, c.column, c.decl)); err != nil {
			return fmt.Errorf("add column %s.%s: %w", c.table, c.column, err)
		}
	}
	return nil
}

func hasColumn(ctx context.Context, db *sql.DB, table, column string) (bool, error) {
	rows, err := db.QueryContext(ctx, `SELECT name FROM pragma_table_info(?)`, table)
	if err != nil {
		return false, fmt.Errorf("columns of %s: %w", table, err)
	}
	defer rows.Close()
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return false, fmt.Errorf("columns of %s: %w", table, err)
		}
		if name == column {
			return true, nil
		}
	}
	if err := rows.Err(); err != nil {
		return false, fmt.Errorf("columns of %s: %w", table, err)
	}
	return false, nil
}
