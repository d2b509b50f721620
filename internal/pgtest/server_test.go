package pgtest

import (
	"context"
	"database/sql"
	"testing"
)

func TestStartServesQueriesAndSeparatesDatabases(t *testing.T) {
	s := Start(t)
	a, b := s.NewDatabase(t), s.NewDatabase(t)
	ctx := context.Background()
	dba, err := sql.Open("pgx", a)
	if err != nil {
		t.Fatal(err)
	}
	defer dba.Close()
	if _, err := dba.ExecContext(ctx, `CREATE TABLE x (v BIGINT)`); err != nil {
		t.Fatal(err)
	}
	dbb, err := sql.Open("pgx", b)
	if err != nil {
		t.Fatal(err)
	}
	defer dbb.Close()
	var n int
	if err := dbb.QueryRowContext(ctx, `SELECT count(*) FROM information_schema.tables WHERE table_name = 'x'`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("database %s sees the table created in %s", b, a)
	}
}
