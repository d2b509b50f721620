package protocol

import (
	"context"

	"github.com/lakegw/lakegw/protocol/groups"
	"github.com/lakegw/lakegw/state"
)

// GroupOffsetStore persists the coordinator's committed offsets in the state
// store.
type GroupOffsetStore struct{ Store *state.Store }

var _ groups.OffsetStore = GroupOffsetStore{}

// LoadOffsets implements groups.OffsetStore.
func (s GroupOffsetStore) LoadOffsets(ctx context.Context) ([]groups.CommittedOffset, error) {
	rows, err := s.Store.GroupOffsets(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]groups.CommittedOffset, len(rows))
	for i, r := range rows {
		out[i] = groups.CommittedOffset(r)
	}
	return out, nil
}

// SaveOffsets implements groups.OffsetStore.
func (s GroupOffsetStore) SaveOffsets(ctx context.Context, offs []groups.CommittedOffset) error {
	rows := make([]state.GroupOffset, len(offs))
	for i, o := range offs {
		rows[i] = state.GroupOffset(o)
	}
	return s.Store.SaveGroupOffsets(ctx, rows)
}

// DeleteGroupOffsets implements groups.OffsetStore.
func (s GroupOffsetStore) DeleteGroupOffsets(ctx context.Context, group string) error {
	return s.Store.DeleteGroupOffsets(ctx, group)
}
