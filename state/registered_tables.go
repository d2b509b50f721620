package state

import (
	"context"
	"encoding/json"
	"fmt"
)

// RegisteredTable is a table served by its metadata location rather than
// through the catalog.
type RegisteredTable struct {
	Ident            string
	MetadataLocation string
	// Remaps are "OLD=NEW" location prefix rules.
	Remaps []string
}

// RegisterTable adds or replaces a registration.
func (s *Store) RegisterTable(ctx context.Context, t RegisteredTable) error {
	remaps, err := json.Marshal(t.Remaps)
	if err != nil {
		return fmt.Errorf("encode remaps: %w", err)
	}
	_, err = s.db.ExecContext(ctx,
		s.d.q(`INSERT INTO registered_tables(ident, metadata_location, remaps) VALUES(?,?,?)
		 ON CONFLICT(ident) DO UPDATE SET metadata_location=excluded.metadata_location, remaps=excluded.remaps`),
		t.Ident, t.MetadataLocation, string(remaps))
	if err != nil {
		return fmt.Errorf("register table %s: %w", t.Ident, err)
	}
	return nil
}

// RegisteredTables lists every registration.
func (s *Store) RegisteredTables(ctx context.Context) ([]RegisteredTable, error) {
	rows, err := s.db.QueryContext(ctx, s.d.q(`SELECT ident, metadata_location, remaps FROM registered_tables ORDER BY ident`))
	if err != nil {
		return nil, fmt.Errorf("list registered tables: %w", err)
	}
	defer rows.Close()
	var out []RegisteredTable
	for rows.Next() {
		var t RegisteredTable
		var remaps string
		if err := rows.Scan(&t.Ident, &t.MetadataLocation, &remaps); err != nil {
			return nil, fmt.Errorf("read registered table: %w", err)
		}
		if err := json.Unmarshal([]byte(remaps), &t.Remaps); err != nil {
			return nil, fmt.Errorf("registered table %s: bad remaps %q: %w", t.Ident, remaps, err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}
