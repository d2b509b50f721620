package state

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lakegw/lakegw/protocol/groups"
)

// TestExpiredOffsetsLeaveTheStateStore checks offset retention against the
// real state store: an expired group's offsets are gone after reopening
// the store, and a kept group's are not.
func TestExpiredOffsetsLeaveTheStateStore(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var mu sync.Mutex
	now := t0
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	opts := groups.Options{OffsetsRetention: time.Hour, OffsetsRetentionCheck: time.Hour, Now: clock}

	store, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	c := groups.New(store, zerolog.Nop(), opts)
	if err := c.Open(ctx); err != nil {
		t.Fatal(err)
	}
	commit := func(group string, off int64) {
		t.Helper()
		r := kmsg.NewPtrOffsetCommitRequest()
		r.Version, r.Group, r.Generation = 8, group, -1
		r.Topics = []kmsg.OffsetCommitRequestTopic{{Topic: "ns.t", Partitions: []kmsg.OffsetCommitRequestTopicPartition{{Partition: 0, Offset: off, LeaderEpoch: -1}}}}
		if code := c.OffsetCommit(ctx, r).Topics[0].Partitions[0].ErrorCode; code != 0 {
			t.Fatalf("commit %s: code %d", group, code)
		}
	}
	commit("old", 4)
	mu.Lock()
	now = t0.Add(50 * time.Minute)
	mu.Unlock()
	commit("recent", 8)
	mu.Lock()
	now = t0.Add(61 * time.Minute)
	mu.Unlock()
	expired, err := c.ExpireOffsets(ctx)
	if err != nil || len(expired) != 1 || expired[0] != "old" {
		t.Fatalf("expired %v, %v; want [old]", expired, err)
	}
	c.Close()
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}

	store, err = Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	rows, err := store.LoadOffsets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].Group != "recent" || rows[0].Offset != 8 {
		t.Fatalf("state store after expiry and reopen: %+v", rows)
	}
	c = groups.New(store, zerolog.Nop(), opts)
	defer c.Close()
	if err := c.Open(ctx); err != nil {
		t.Fatal(err)
	}
	f := kmsg.NewPtrOffsetFetchRequest()
	f.Version = 7
	f.Group = "old"
	f.Topics = []kmsg.OffsetFetchRequestTopic{{Topic: "ns.t", Partitions: []int32{0}}}
	if got := c.OffsetFetch(ctx, f).Topics[0].Partitions[0].Offset; got != -1 {
		t.Fatalf("expired group fetches offset %d after restart, want -1", got)
	}
}
