package state

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/lakegw/lakegw/cluster"
	"github.com/lakegw/lakegw/internal/pgtest"
	"github.com/lakegw/lakegw/offsets"
	"github.com/lakegw/lakegw/protocol/groups"
	"github.com/lakegw/lakegw/txn"
)

// backend opens (and reopens) one store of a kind, closed when the test ends.
type backend struct {
	name string
	open func(t *testing.T) *Store
}

// backends are the SQLite store and one on a real PostgreSQL server: every
// behaviour the gateway relies on holds on both.
func backends(t *testing.T) []backend {
	path := filepath.Join(t.TempDir(), "state.db")
	pg := pgtest.Start(t)
	url := pg.NewDatabase(t)
	opener := func(open func() (*Store, error)) func(*testing.T) *Store {
		return func(t *testing.T) *Store {
			t.Helper()
			s, err := open()
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}
	}
	ctx := context.Background()
	return []backend{
		{"sqlite", opener(func() (*Store, error) { return Open(ctx, path) })},
		{"postgres", opener(func() (*Store, error) { return OpenPostgres(ctx, url) })},
	}
}

func TestStoreOnEveryBackend(t *testing.T) {
	ctx := context.Background()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			t.Run("index", func(t *testing.T) { testIndexRoundTrip(ctx, t, b) })
			t.Run("group offsets", func(t *testing.T) { testGroupOffsets(ctx, t, b) })
			t.Run("transactions", func(t *testing.T) { testTransactions(ctx, t, b) })
			t.Run("registered tables", func(t *testing.T) { testRegisteredTables(ctx, t, b) })
		})
	}
}

func testIndexRoundTrip(ctx context.Context, t *testing.T, b backend) {
	s := b.open(t)
	st := offsets.TopicState{Topic: "ns.t", TableUUID: "u-1", Partitions: 2, Encoding: "json/v1",
		Epochs: [][]offsets.EpochStart{{{Epoch: 4, StartOffset: 0}}, {{Epoch: 4, StartOffset: 0}, {Epoch: 9, StartOffset: 3}}}}
	big := int64(1) << 40 // 64-bit values must not be cut to 32 bits
	first := []offsets.Segment{
		{Kind: offsets.KindChanges, Partition: 1, SnapshotID: -7308462123456789, SequenceNumber: 1, TimestampMs: 1700000000000, BaseOffset: big, Count: 3, Epoch: 4},
		{Kind: offsets.KindChanges, Partition: 0, SnapshotID: 10, SequenceNumber: 1, TimestampMs: 100, BaseOffset: 0, Count: 2, Epoch: 4},
	}
	if err := s.ReplaceTopic(ctx, st, first); err != nil {
		t.Fatal(err)
	}
	// Empty segments at one offset keep the order they were appended in.
	more := []offsets.Segment{
		{Kind: offsets.KindChanges, Partition: 0, SnapshotID: 12, SequenceNumber: 3, TimestampMs: 300, BaseOffset: 2, Count: 0, Epoch: 8},
		{Kind: offsets.KindChanges, Partition: 0, SnapshotID: 11, SequenceNumber: 2, TimestampMs: 200, BaseOffset: 2, Count: 0, Epoch: 8},
		{Kind: offsets.KindChanges, Partition: 1, SnapshotID: 11, SequenceNumber: 2, TimestampMs: 200, BaseOffset: big + 3, Count: 1, Epoch: 8},
	}
	if err := s.AppendSegments(ctx, st, more); err != nil {
		t.Fatal(err)
	}
	s = b.open(t)
	gotSt, got, found, err := s.LoadTopic(ctx, "ns.t")
	if err != nil || !found {
		t.Fatalf("load: found %v, %v", found, err)
	}
	if !reflect.DeepEqual(gotSt, st) {
		t.Errorf("state %+v, want %+v", gotSt, st)
	}
	want := []offsets.Segment{first[1], more[0], more[1], first[0], more[2]}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("segments\n%+v\nwant\n%+v", got, want)
	}
	// A compacted prefix replaces the segments it stands in for and loads
	// before the empty segments sharing its offset.
	prefix := []offsets.Segment{{Kind: offsets.KindCompactedPrefix, Partition: 0, SnapshotID: 11, SequenceNumber: 2, TimestampMs: 200, BaseOffset: 0, Count: 2, Epoch: 9}}
	if err := s.ReplacePrefix(ctx, st, []offsets.Segment{first[1]}, prefix); err != nil {
		t.Fatal(err)
	}
	if _, got, _, err = s.LoadTopic(ctx, "ns.t"); err != nil {
		t.Fatal(err)
	}
	if want := []offsets.Segment{prefix[0], more[0], more[1], first[0], more[2]}; !reflect.DeepEqual(got, want) {
		t.Errorf("after a prefix\n%+v\nwant\n%+v", got, want)
	}
	if _, _, found, err := s.LoadTopic(ctx, "ns.other"); found || err != nil {
		t.Errorf("a topic never indexed: found %v, %v", found, err)
	}
}

func testGroupOffsets(ctx context.Context, t *testing.T, b backend) {
	s := b.open(t)
	// Kafka lets any bytes through a group id or commit metadata.
	odd := "g\x00\xff\xfe"
	offs := []groups.CommittedOffset{
		{Group: "g1", Topic: "ns.t", Partition: 0, Offset: 1 << 40, LeaderEpoch: 3, Metadata: "m", CommitTimeMs: 1700000000000},
		{Group: "g1", Topic: "ns.t", Partition: 1, Offset: 5, LeaderEpoch: -1, Metadata: "", CommitTimeMs: 2},
		{Group: odd, Topic: "ns.t", Partition: 0, Offset: 7, LeaderEpoch: -1, Metadata: "\x00meta\xc3", CommitTimeMs: 3},
	}
	if err := s.SaveOffsets(ctx, offs); err != nil {
		t.Fatal(err)
	}
	offs[1].Offset = 6 // an upsert
	if err := s.SaveOffsets(ctx, offs[1:2]); err != nil {
		t.Fatal(err)
	}
	s = b.open(t)
	if got := loadOffsets(ctx, t, s); !reflect.DeepEqual(got, sortOffsets(offs)) {
		t.Errorf("offsets\n%+v\nwant\n%+v", got, sortOffsets(offs))
	}
	if err := s.DeletePartitionOffsets(ctx, "g1", []groups.TopicPartition{{Topic: "ns.t", Partition: 1}}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteGroupOffsets(ctx, odd); err != nil {
		t.Fatal(err)
	}
	if got := loadOffsets(ctx, t, s); !reflect.DeepEqual(got, offs[:1]) {
		t.Errorf("after deletes %+v, want %+v", got, offs[:1])
	}
}

func loadOffsets(ctx context.Context, t *testing.T, s *Store) []groups.CommittedOffset {
	t.Helper()
	got, err := s.LoadOffsets(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return sortOffsets(got)
}

func sortOffsets(offs []groups.CommittedOffset) []groups.CommittedOffset {
	out := append([]groups.CommittedOffset(nil), offs...)
	sort.Slice(out, func(i, j int) bool {
		if out[i].Group != out[j].Group {
			return out[i].Group < out[j].Group
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}

func testTransactions(ctx context.Context, t *testing.T, b backend) {
	s := b.open(t)
	id := "tx\x00\xff"
	rec := txn.Record{ID: id, ProducerID: 1 << 50, Epoch: 3, PrevEpoch: -1, TimeoutMs: 60000, Number: 2, StartMs: 5, UpdateMs: 6,
		Partitions: []txn.TopicPartition{{Topic: "ns.t", Partition: 0}}, Groups: []string{"g"}}
	batches := []txn.StagedBatch{
		{N: 1, Topic: "ns.t", Partition: 0, FirstSeq: 0, LastSeq: 9, Batch: []byte{0, 1, 2, 0xff}},
		{N: 2, Topic: "ns.t", Partition: 0, FirstSeq: 10, LastSeq: 19, Batch: []byte{3}},
		{N: 3, Topic: "ns.u", Partition: 1, FirstSeq: 0, LastSeq: 0, Batch: []byte{4}},
	}
	if err := s.StageBatches(ctx, rec, batches); err != nil {
		t.Fatal(err)
	}
	staged := []txn.StagedOffset{{Group: "g\x00", Topic: "ns.t", Partition: 0, Offset: 1 << 41, LeaderEpoch: 2, Metadata: "\xff"}}
	if err := s.StageOffsets(ctx, rec, staged); err != nil {
		t.Fatal(err)
	}
	s = b.open(t)
	recs, err := s.LoadTransactions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || !reflect.DeepEqual(recs[0], rec) {
		t.Errorf("records %+v, want %+v", recs, rec)
	}
	got, err := s.StagedBatches(ctx, id, "ns.t")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, batches[:2]) {
		t.Errorf("staged batches %+v, want %+v", got, batches[:2])
	}
	gotOffs, err := s.StagedOffsets(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotOffs, staged) {
		t.Errorf("staged offsets %+v, want %+v", gotOffs, staged)
	}
	rec.Number++
	if err := s.ClearStaged(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if got, err := s.StagedBatches(ctx, id, "ns.t"); err != nil || len(got) != 0 {
		t.Errorf("after ClearStaged: %d batches, %v", len(got), err)
	}
	if err := s.DeleteTransaction(ctx, id); err != nil {
		t.Fatal(err)
	}
	if recs, err := s.LoadTransactions(ctx); err != nil || len(recs) != 0 {
		t.Errorf("after DeleteTransaction: %+v, %v", recs, err)
	}
}

func testRegisteredTables(ctx context.Context, t *testing.T, b backend) {
	s := b.open(t)
	want := []RegisteredTable{
		{Ident: "a.t", MetadataLocation: "/x/metadata/v1.metadata.json", Remaps: []string{"s3://old=/new"}},
		{Ident: "b.t", MetadataLocation: "/y/v2.metadata.json", Remaps: []string{}},
	}
	for _, r := range want {
		if err := s.RegisterTable(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	got, err := b.open(t).RegisteredTables(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("registrations %+v, want %+v", got, want)
	}
}

// One gateway serves from a PostgreSQL store at a time, until gateways
// share the work; the lock goes with the gateway's store.
func TestPostgresStoreServesOneGateway(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Start(t).NewDatabase(t)
	first, err := OpenPostgres(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if err := first.LockForGateway(ctx); err != nil {
		t.Fatal(err)
	}
	second, err := OpenPostgres(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	if err := second.LockForGateway(ctx); !errors.Is(err, ErrStoreInUse) {
		t.Fatalf("a second gateway's lock: %v, want ErrStoreInUse", err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if err := second.LockForGateway(ctx); err != nil {
		t.Fatalf("after the first gateway closed: %v", err)
	}
}

// Gateways starting together migrate once; a store a newer lakegw
// migrated further is refused with a message saying so.
func TestPostgresMigrations(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Start(t).NewDatabase(t)
	errs := make(chan error, 4)
	for range 4 {
		go func() {
			s, err := OpenPostgres(ctx, url)
			if err == nil {
				err = s.Close()
			}
			errs <- err
		}()
	}
	for range 4 {
		if err := <-errs; err != nil {
			t.Fatalf("concurrent open: %v", err)
		}
	}
	s, err := OpenPostgres(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.ExecContext(ctx, `UPDATE lakegw_schema SET version = version + 1`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := OpenPostgres(ctx, url); err == nil || !strings.Contains(err.Error(), "newer lakegw") {
		t.Fatalf("open of a newer schema: %v", err)
	}
}

// Gateways sharing a store index the same tables: a segment stored
// already is accepted when it agrees and refused when it does not.
func TestSegmentsStoredTwiceMustAgree(t *testing.T) {
	ctx := context.Background()
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			s := b.open(t)
			st := offsets.TopicState{Topic: "ns.twice", TableUUID: "u", Partitions: 1, Epochs: [][]offsets.EpochStart{{{Epoch: 1}}}}
			g := offsets.Segment{Partition: 0, SnapshotID: 5, SequenceNumber: 1, TimestampMs: 10, BaseOffset: 0, Count: 3, Epoch: 1}
			if err := s.AppendSegments(ctx, st, []offsets.Segment{g}); err != nil {
				t.Fatal(err)
			}
			if err := b.open(t).AppendSegments(ctx, st, []offsets.Segment{g}); err != nil {
				t.Fatalf("the same segment again: %v", err)
			}
			other := g
			other.Count = 4
			if err := b.open(t).AppendSegments(ctx, st, []offsets.Segment{other}); !errors.Is(err, ErrIndexDisagrees) {
				t.Fatalf("a disagreeing segment: %v, want ErrIndexDisagrees", err)
			}
			if _, segs, _, err := s.LoadTopic(ctx, "ns.twice"); err != nil || len(segs) != 1 || segs[0] != g {
				t.Fatalf("stored %+v (%v), want only %+v", segs, err, g)
			}
		})
	}
}

// The live gateways, by the database's clock: a node id is held by one
// live instance; it is free again once that instance left or stopped
// heartbeating for a lease; the SQLite store cannot be shared.
func TestGatewayRegistry(t *testing.T) {
	ctx := context.Background()
	s, err := OpenPostgres(ctx, pgtest.Start(t).NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	n0 := cluster.Node{ID: 0, Host: "127.0.0.1", Port: 9092}
	n1 := cluster.Node{ID: 1, Host: "127.0.0.1", Port: 9093}
	const lease = 400 * time.Millisecond
	if _, err := s.Heartbeat(ctx, n0, "a", lease); err != nil {
		t.Fatal(err)
	}
	live, err := s.Heartbeat(ctx, n1, "b", lease)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(live, []cluster.Node{n0, n1}) {
		t.Fatalf("live %+v, want both", live)
	}
	if _, err := s.Heartbeat(ctx, n1, "c", lease); !errors.Is(err, cluster.ErrNodeIDTaken) {
		t.Fatalf("a second instance as node 1: %v, want ErrNodeIDTaken", err)
	}
	if err := s.Leave(ctx, 1, "b"); err != nil {
		t.Fatal(err)
	}
	if live, err = s.Heartbeat(ctx, n0, "a", lease); err != nil || !reflect.DeepEqual(live, []cluster.Node{n0}) {
		t.Fatalf("after node 1 left: %+v, %v", live, err)
	}
	// Node 0 stops heartbeating: dead after the lease, its id free.
	time.Sleep(lease + 100*time.Millisecond)
	if live, err = s.Heartbeat(ctx, n1, "c", lease); err != nil || !reflect.DeepEqual(live, []cluster.Node{n1}) {
		t.Fatalf("after node 0's lease: %+v, %v", live, err)
	}
	if _, err := s.Heartbeat(ctx, n0, "d", lease); err != nil {
		t.Fatalf("node 0's id after its lease: %v", err)
	}

	sqlite := openTestStore(t)
	if _, err := sqlite.Heartbeat(ctx, n0, "a", lease); !errors.Is(err, ErrNotShared) {
		t.Fatalf("a heartbeat to SQLite: %v, want ErrNotShared", err)
	}
}

// Offset writes are fenced by shard claims when gateways share the store:
// a gateway's writes of a group fail once another claimed its shard, and
// succeed again only after it claims the shard back.
func TestShardClaimsFenceOffsetWrites(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Start(t).NewDatabase(t)
	open := func() *Store {
		s, err := OpenPostgres(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		if err := s.FenceGroupWrites(5 * time.Second); err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b := open(), open()
	shard := []int32{cluster.Shard("g")}
	commit := func(s *Store, off int64) error {
		return s.SaveOffsets(ctx, []groups.CommittedOffset{{Group: "g", Topic: "t", Offset: off, LeaderEpoch: -1}})
	}
	if err := commit(a, 1); !errors.Is(err, groups.ErrShardNotOwned) {
		t.Fatalf("a write before any claim: %v, want ErrShardNotOwned", err)
	}
	if err := a.ClaimShards(ctx, shard); err != nil {
		t.Fatal(err)
	}
	if err := commit(a, 2); err != nil {
		t.Fatal(err)
	}
	if err := b.ClaimShards(ctx, shard); err != nil {
		t.Fatal(err)
	}
	if err := commit(a, 3); !errors.Is(err, groups.ErrShardNotOwned) {
		t.Fatalf("the old owner's write: %v, want ErrShardNotOwned", err)
	}
	if err := a.DeleteGroupOffsets(ctx, "g"); !errors.Is(err, groups.ErrShardNotOwned) {
		t.Fatalf("the old owner's delete: %v, want ErrShardNotOwned", err)
	}
	if err := commit(b, 4); err != nil {
		t.Fatal(err)
	}
	if got := loadOffsets(ctx, t, b); len(got) != 1 || got[0].Offset != 4 {
		t.Fatalf("stored %+v, want the new owner's 4", got)
	}
	if err := openTestStore(t).FenceGroupWrites(time.Second); !errors.Is(err, ErrNotShared) {
		t.Fatalf("fencing a SQLite store: %v", err)
	}
}

// Saves batched in one transaction where one group's shard moved: that
// save fails with ErrShardNotOwned, the others land.
func TestAMovedShardFailsOnlyItsOwnSaves(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Start(t).NewDatabase(t)
	s, err := OpenPostgres(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.FenceGroupWrites(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	mine, moved := "g-mine", "g-moved"
	for i := 0; cluster.Shard(mine) == cluster.Shard(moved); i++ {
		moved = fmt.Sprintf("g-moved-%d", i)
	}
	if err := s.ClaimShards(ctx, []int32{cluster.Shard(mine)}); err != nil {
		t.Fatal(err)
	}
	// Hold the writer's slot so that both saves queue into one batch.
	s.saves.writing <- struct{}{}
	errs := make(chan error, 2)
	for _, g := range []string{mine, moved} {
		go func() {
			errs <- s.SaveOffsets(ctx, []groups.CommittedOffset{{Group: g, Topic: "t", Offset: 1, LeaderEpoch: -1}})
		}()
	}
	for {
		s.saves.mu.Lock()
		n := len(s.saves.queued)
		s.saves.mu.Unlock()
		if n == 2 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	<-s.saves.writing
	var notOwned, ok int
	for range 2 {
		switch err := <-errs; {
		case err == nil:
			ok++
		case errors.Is(err, groups.ErrShardNotOwned):
			notOwned++
		default:
			t.Fatal(err)
		}
	}
	if ok != 1 || notOwned != 1 {
		t.Fatalf("%d saves landed and %d were refused, want 1 and 1", ok, notOwned)
	}
	if got := loadOffsets(ctx, t, s); len(got) != 1 || got[0].Group != mine {
		t.Fatalf("stored %+v, want only %s's", got, mine)
	}
}
