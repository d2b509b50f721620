package state

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/lakegw/lakegw/cluster"
	"github.com/lakegw/lakegw/protocol/groups"
)

// Gateways sharing a store coordinate the groups of their shards
// (cluster/). A gateway that lost a shard may still have a write of its
// groups' offsets under way, held up by a slow database or a paused
// process; it must not land after the new coordinator loaded the shard,
// or the store would go back to an older offset than the one the new
// coordinator serves. So a coordinator claims a shard before it loads it
// (ClaimShards: the row of the shard names this gateway's instance), and
// every write of offsets checks, in its own transaction, that the shards
// of its groups are still claimed by this instance, holding the rows
// FOR SHARE: a claim waits for the writes that checked before it, and the
// writes after it fail with groups.ErrShardNotOwned.
//
// A write is also bounded in time (FenceGroupWrites): the instance check
// cannot tell this gateway's claim of now from its claim of before it lost
// the shard and took it back, and the takeover's grace, longer than the
// bound, keeps both inside one write's life apart.

// shardClaims is the store's fencing of offset writes, off by default.
type shardClaims struct {
	enabled  bool
	instance string
	timeout  time.Duration
}

var _ groups.ShardClaimer = (*Store)(nil)

// FenceGroupWrites makes every later write of committed offsets check that
// this store instance claimed the shards of its groups, and bounds each
// write to timeout. Call it before serving, on a PostgreSQL store.
func (s *Store) FenceGroupWrites(timeout time.Duration) error {
	if s.d != postgresDialect {
		return ErrNotShared
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return fmt.Errorf("shard claims: instance id: %w", err)
	}
	s.claims = shardClaims{enabled: true, instance: hex.EncodeToString(b[:]), timeout: timeout}
	return nil
}

// ClaimShards makes this instance the owner of shards; it returns once the
// writes that checked an earlier owner's claim have ended.
func (s *Store) ClaimShards(ctx context.Context, shards []int32) error {
	if !s.claims.enabled {
		return nil
	}
	sorted := slices.Sorted(slices.Values(shards)) // one lock order for every gateway
	return s.inTx(ctx, func(tx *sql.Tx) error {
		for _, shard := range sorted {
			if _, err := tx.ExecContext(ctx,
				`INSERT INTO group_shards(shard, instance, epoch) VALUES($1, $2, 1)
				 ON CONFLICT (shard) DO UPDATE SET instance = excluded.instance, epoch = group_shards.epoch + 1`,
				shard, s.claims.instance); err != nil {
				return fmt.Errorf("claim group shard %d: %w", shard, err)
			}
		}
		return nil
	})
}

// fenced runs a write of the offsets of groups: in one transaction that
// first checks their shards are this instance's, within the write bound.
func (s *Store) fenced(ctx context.Context, groupIDs []string, write func(*sql.Tx) error) error {
	if !s.claims.enabled {
		return s.inTx(ctx, write)
	}
	ctx, cancel := context.WithTimeout(ctx, s.claims.timeout)
	defer cancel()
	shards := make([]int32, 0, len(groupIDs))
	for _, g := range groupIDs {
		shards = append(shards, cluster.Shard(g))
	}
	slices.Sort(shards)
	shards = slices.Compact(shards)
	return s.inTx(ctx, func(tx *sql.Tx) error {
		for _, shard := range shards {
			var instance string
			err := tx.QueryRowContext(ctx, `SELECT instance FROM group_shards WHERE shard = $1 FOR SHARE`, shard).Scan(&instance)
			if errors.Is(err, sql.ErrNoRows) || err == nil && instance != s.claims.instance {
				return fmt.Errorf("group shard %d: %w", shard, groups.ErrShardNotOwned)
			}
			if err != nil {
				return fmt.Errorf("check the claim of group shard %d: %w", shard, err)
			}
		}
		return write(tx)
	})
}
