package protocol

import (
	"context"
	"errors"
	"fmt"

	"github.com/lakegw/lakegw/produce"
	"github.com/lakegw/lakegw/protocol/groups"
	"github.com/lakegw/lakegw/txn"
)

// TxnTables is what the transaction coordinator commits through: the
// produce path, given the batches a transaction staged as their producer
// sent them, decoded here where Kafka's record batch is known.
func TxnTables(p *produce.Service) txn.Tables { return txnTables{p} }

type txnTables struct{ p *produce.Service }

func (t txnTables) CheckPartition(ctx context.Context, topic string, partition int32) error {
	return t.p.CheckPartition(ctx, topic, partition)
}

// gone maps a topic that no longer exists to txn.ErrTopicGone.
func gone(err error) error {
	if errors.Is(err, produce.ErrUnknownTopic) {
		return fmt.Errorf("%w: %w", txn.ErrTopicGone, err)
	}
	return err
}

func (t txnTables) Commit(ctx context.Context, topic, marker string, staged []txn.StagedBatch) error {
	batches := make([]produce.Batch, 0, len(staged))
	for _, s := range staged {
		b, err := decodeBatch(s.Partition, s.Batch, true)
		if err != nil {
			// Decoded once when staged: the state store's copy is damaged.
			return fmt.Errorf("staged batch %d of %s/%d: %w", s.N, topic, s.Partition, err)
		}
		batches = append(batches, b)
	}
	return gone(t.p.CommitTransaction(ctx, topic, marker, batches))
}

func (t txnTables) Committed(ctx context.Context, topic, marker string) (bool, error) {
	ok, err := t.p.TransactionCommitted(ctx, topic, marker)
	return ok, gone(err)
}

// TxnOffsets is how the transaction coordinator commits the group offsets
// of a transaction: through the group coordinator.
func TxnOffsets(g *groups.Coordinator) txn.Offsets { return txnOffsets{g} }

type txnOffsets struct{ g *groups.Coordinator }

func (o txnOffsets) CommitOffsets(ctx context.Context, offs []txn.StagedOffset) error {
	out := make([]groups.CommittedOffset, len(offs))
	for i, s := range offs {
		out[i] = groups.CommittedOffset{Group: s.Group, Topic: s.Topic, Partition: s.Partition, Offset: s.Offset,
			LeaderEpoch: s.LeaderEpoch, Metadata: s.Metadata}
	}
	return o.g.CommitOffsets(ctx, out)
}
