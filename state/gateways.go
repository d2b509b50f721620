package state

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/lakegw/lakegw/cluster"
)

// Store is where gateways find each other (cluster.Registry), on
// PostgreSQL.
var _ cluster.Registry = (*Store)(nil)

// ErrNotShared: several gateways need a store they can share.
var ErrNotShared = errors.New("several gateways need the PostgreSQL state store (--state postgres://...)")

// Heartbeat renews n's row for instance, taking it over when the instance
// holding it stopped heartbeating for a lease, and returns the live nodes.
func (s *Store) Heartbeat(ctx context.Context, n cluster.Node, instance string, lease time.Duration) ([]cluster.Node, error) {
	if s.d != postgresDialect {
		return nil, ErrNotShared
	}
	secs := lease.Seconds()
	var id int32
	err := s.db.QueryRowContext(ctx,
		`INSERT INTO gateways(node_id, host, port, instance, beat_at, defaults) VALUES($1, $2, $3, $4, now(), $6)
		 ON CONFLICT (node_id) DO UPDATE SET host = excluded.host, port = excluded.port, instance = excluded.instance, beat_at = now(),
		   defaults = excluded.defaults
		 WHERE gateways.instance = excluded.instance OR gateways.beat_at < now() - make_interval(secs => $5)
		 RETURNING node_id`, n.ID, n.Host, n.Port, instance, secs, n.Defaults).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, cluster.ErrNodeIDTaken
	}
	if err != nil {
		return nil, fmt.Errorf("heartbeat of node %d: %w", n.ID, err)
	}
	rows, err := s.db.QueryContext(ctx,
		`SELECT node_id, host, port, defaults FROM gateways WHERE beat_at >= now() - make_interval(secs => $1) ORDER BY node_id`, secs)
	if err != nil {
		return nil, fmt.Errorf("live gateways: %w", err)
	}
	defer rows.Close()
	var out []cluster.Node
	for rows.Next() {
		var g cluster.Node
		if err := rows.Scan(&g.ID, &g.Host, &g.Port, &g.Defaults); err != nil {
			return nil, fmt.Errorf("live gateways: %w", err)
		}
		out = append(out, g)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("live gateways: %w", err)
	}
	return out, nil
}

// Leave removes node id's row if instance still holds it.
func (s *Store) Leave(ctx context.Context, id int32, instance string) error {
	if s.d != postgresDialect {
		return ErrNotShared
	}
	if _, err := s.db.ExecContext(ctx, `DELETE FROM gateways WHERE node_id = $1 AND instance = $2`, id, instance); err != nil {
		return fmt.Errorf("leave as node %d: %w", id, err)
	}
	return nil
}
