package txn_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/lakegw/lakegw/state"
	"github.com/lakegw/lakegw/txn"
)

// lake is a fake of the tables transactions commit to: each topic's
// commits by marker, and a failure to inject per topic.
type lake struct {
	mu      sync.Mutex
	commits map[string]map[string][]txn.StagedBatch
	fail    map[string]error
}

func newLake() *lake {
	return &lake{commits: map[string]map[string][]txn.StagedBatch{}, fail: map[string]error{}}
}

func (l *lake) CheckPartition(_ context.Context, topic string, p int32) error {
	if topic == "unknown" {
		return errors.New("unknown topic")
	}
	return nil
}

func (l *lake) Commit(_ context.Context, topic, marker string, batches []txn.StagedBatch) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.fail[topic]; err != nil {
		return err
	}
	if l.commits[topic] == nil {
		l.commits[topic] = map[string][]txn.StagedBatch{}
	}
	if _, twice := l.commits[topic][marker]; twice {
		return fmt.Errorf("transaction %s committed to %s twice", marker, topic)
	}
	l.commits[topic][marker] = batches
	return nil
}

func (l *lake) Committed(_ context.Context, topic, marker string) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	_, ok := l.commits[topic][marker]
	return ok, nil
}

// failing has commits to topic fail with err (nil: succeed again).
func (l *lake) failing(topic string, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if err == nil {
		delete(l.fail, topic)
		return
	}
	l.fail[topic] = err
}

// records counts the committed batches of topic.
func (l *lake) records(topic string) (n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, bs := range l.commits[topic] {
		n += len(bs)
	}
	return n
}

type offsets struct {
	mu  sync.Mutex
	got []txn.StagedOffset
}

func (o *offsets) CommitOffsets(_ context.Context, offs []txn.StagedOffset) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.got = append(o.got, offs...)
	return nil
}

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// fixture is a coordinator over a real state store in dir.
type fixture struct {
	t     *testing.T
	dir   string
	store *state.Store
	lake  *lake
	offs  *offsets
	clock *clock
	c     *txn.Coordinator
}

func newFixture(t *testing.T) *fixture {
	f := &fixture{t: t, dir: t.TempDir(), lake: newLake(), offs: &offsets{}, clock: &clock{now: time.Unix(1_700_000_000, 0)}}
	f.open()
	t.Cleanup(f.close)
	return f
}

func (f *fixture) open() {
	st, err := state.Open(context.Background(), filepath.Join(f.dir, "state.db"))
	if err != nil {
		f.t.Fatal(err)
	}
	f.store = st
	f.c = txn.New(st, f.lake, f.offs, txn.Options{Now: f.clock.Now, RetryInterval: time.Hour, Log: zerolog.Nop()})
	if err := f.c.Open(context.Background()); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) close() {
	if f.c != nil {
		f.c.Close()
		f.store.Close()
		f.c = nil
	}
}

// restart is a gateway restart: a new coordinator on the same store.
func (f *fixture) restart() {
	f.close()
	f.open()
}

func batch(topic string, p int32, first, n int32) txn.StagedBatch {
	return txn.StagedBatch{Topic: topic, Partition: p, FirstSeq: first, LastSeq: first + n - 1, Batch: []byte(fmt.Sprintf("%s/%d/%d", topic, p, first))}
}

// stage stages one batch.
func (f *fixture) stage(id string, pid int64, epoch int16, b txn.StagedBatch) error {
	return f.c.Stage(context.Background(), id, pid, epoch, []txn.StagedBatch{b})[0]
}

// begin gives id a producer and adds parts, returning the producer.
func (f *fixture) begin(id string, parts ...txn.TopicPartition) (int64, int16) {
	ctx := context.Background()
	pid, epoch, err := f.c.InitProducerID(ctx, id, 60_000, -1, -1)
	if err != nil {
		f.t.Fatal(err)
	}
	errs, err := f.c.AddPartitions(ctx, id, pid, epoch, parts)
	if err != nil || errors.Join(errs...) != nil {
		f.t.Fatalf("add partitions: %v %v", err, errs)
	}
	return pid, epoch
}

// A transaction whose batches were staged survives a restart and is
// committed after it by the same producer id and epoch (Flink's
// committer on recovery); a retried batch is staged once.
func TestStagedTransactionSurvivesRestart(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	pid, epoch := f.begin("flink-0", txn.TopicPartition{Topic: "a", Partition: 0}, txn.TopicPartition{Topic: "a", Partition: 1})
	for i := range int32(3) {
		for p := range int32(2) {
			if err := f.stage("flink-0", pid, epoch, batch("a", p, i*10, 10)); err != nil {
				t.Fatalf("stage: %v", err)
			}
		}
	}
	if err := f.stage("flink-0", pid, epoch, batch("a", 1, 20, 10)); err != nil {
		t.Fatalf("a retried batch: %v, want it accepted (and staged once: 6 batches commit below)", err)
	}
	if err := f.stage("flink-0", pid, epoch, batch("a", 1, 40, 10)); !errors.Is(err, txn.ErrOutOfOrderSequence) {
		t.Fatalf("a batch skipping sequences: %v, want ErrOutOfOrderSequence", err)
	}
	f.restart()
	if err := f.stage("flink-0", pid, epoch, batch("a", 0, 10, 10)); !errors.Is(err, txn.ErrDuplicateSequence) {
		t.Fatalf("a batch staged before the restart, again: %v, want ErrDuplicateSequence", err)
	}
	if err := f.c.EndTxn(ctx, "flink-0", pid, epoch, true); err != nil {
		t.Fatalf("commit after restart: %v", err)
	}
	if n := f.lake.records("a"); n != 6 {
		t.Fatalf("%d batches committed, want the 6 staged", n)
	}
	f.lake.mu.Lock()
	for _, bs := range f.lake.commits["a"] {
		for i := 1; i < len(bs); i++ {
			if bs[i].N <= bs[i-1].N {
				t.Errorf("batches committed out of staging order: %d after %d", bs[i].N, bs[i-1].N)
			}
		}
	}
	f.lake.mu.Unlock()
	if err := f.c.EndTxn(ctx, "flink-0", pid, epoch, true); err != nil {
		t.Fatalf("a retried commit: %v, want success", err)
	}
	if err := f.c.EndTxn(ctx, "flink-0", pid, epoch, false); !errors.Is(err, txn.ErrInvalidTxnState) {
		t.Fatalf("abort of a committed transaction: %v, want ErrInvalidTxnState", err)
	}
}

// A commit decided (PrepareCommit) but failing on one of its tables is
// completed by the coordinator once the table takes it, after a restart
// too, with every table committed exactly once; the transaction's group
// offsets are committed with it and unstable until then.
func TestDecidedCommitCompletesAcrossFailureAndRestart(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	pid, epoch := f.begin("etl", txn.TopicPartition{Topic: "a", Partition: 0}, txn.TopicPartition{Topic: "b", Partition: 0})
	if err := f.c.AddOffsets(ctx, "etl", pid, epoch, "readers"); err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{"a", "b"} {
		if err := f.stage("etl", pid, epoch, batch(topic, 0, 0, 5)); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.c.StageOffsets(ctx, "etl", pid, epoch, []txn.StagedOffset{{Group: "readers", Topic: "in", Partition: 0, Offset: 42}}); err != nil {
		t.Fatal(err)
	}
	if !f.c.UnstableOffset("readers", "in", 0) {
		t.Fatal("a staged offset is not reported unstable")
	}
	f.lake.failing("b", errors.New("catalog down"))
	if err := f.c.EndTxn(ctx, "etl", pid, epoch, true); !errors.Is(err, txn.ErrConcurrentTransactions) {
		t.Fatalf("commit with table b failing: %v, want ErrConcurrentTransactions", err)
	}
	if f.lake.records("a") != 1 || f.lake.records("b") != 0 || len(f.offs.got) != 0 {
		t.Fatalf("after a part-failed commit: a %d b %d offsets %d, want 1 0 0", f.lake.records("a"), f.lake.records("b"), len(f.offs.got))
	}
	if _, _, err := f.c.InitProducerID(ctx, "etl", 60_000, -1, -1); !errors.Is(err, txn.ErrConcurrentTransactions) {
		t.Fatalf("a new producer while the commit cannot complete: %v, want ErrConcurrentTransactions", err)
	}
	f.restart()
	if !f.c.UnstableOffset("readers", "in", 0) {
		t.Fatal("after the restart the staged offset is not reported unstable")
	}
	f.lake.failing("b", nil)
	if err := f.c.EndTxn(ctx, "etl", pid, epoch, true); err != nil {
		t.Fatalf("the producer's retried commit: %v", err)
	}
	if f.lake.records("a") != 1 || f.lake.records("b") != 1 {
		t.Fatalf("a %d b %d commits, want one each", f.lake.records("a"), f.lake.records("b"))
	}
	if len(f.offs.got) != 1 || f.offs.got[0].Offset != 42 || f.c.UnstableOffset("readers", "in", 0) {
		t.Fatalf("offsets committed %+v (unstable %v), want offset 42, stable", f.offs.got, f.c.UnstableOffset("readers", "in", 0))
	}
}

// A transaction open past its timeout is aborted by the coordinator's
// sweep and its producer fenced; a new producer of the id fences the
// old one and aborts its transaction.
func TestTimeoutAndFencing(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	f.close()
	f.c = nil
	st, err := state.Open(ctx, filepath.Join(f.dir, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	f.store = st
	f.c = txn.New(st, f.lake, f.offs, txn.Options{Now: f.clock.Now, RetryInterval: 10 * time.Millisecond, Log: zerolog.Nop()})
	if err := f.c.Open(ctx); err != nil {
		t.Fatal(err)
	}
	pid, epoch := f.begin("slow", txn.TopicPartition{Topic: "a", Partition: 0})
	if err := f.stage("slow", pid, epoch, batch("a", 0, 0, 1)); err != nil {
		t.Fatal(err)
	}
	f.clock.add(61 * time.Second)
	deadline := time.Now().Add(5 * time.Second)
	for {
		recs, _ := f.c.Describe([]string{"slow"})
		if recs[0].State == txn.StateCompleteAbort {
			if recs[0].Epoch != epoch+1 {
				t.Fatalf("timed out at epoch %d, want %d (fenced)", recs[0].Epoch, epoch+1)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("transaction still %s a minute past its timeout", recs[0].State)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := f.c.EndTxn(ctx, "slow", pid, epoch, true); !errors.Is(err, txn.ErrProducerFenced) {
		t.Fatalf("the timed-out producer's commit: %v, want ErrProducerFenced", err)
	}

	pid, epoch = f.begin("twin", txn.TopicPartition{Topic: "a", Partition: 0})
	if err := f.stage("twin", pid, epoch, batch("a", 0, 0, 1)); err != nil {
		t.Fatal(err)
	}
	npid, nepoch, err := f.c.InitProducerID(ctx, "twin", 60_000, -1, -1)
	if err != nil || npid != pid || nepoch != epoch+1 {
		t.Fatalf("second producer: %d/%d %v, want %d/%d", npid, nepoch, err, pid, epoch+1)
	}
	if err := f.stage("twin", pid, epoch, batch("a", 0, 1, 1)); !errors.Is(err, txn.ErrProducerFenced) {
		t.Fatalf("the fenced producer's records: %v, want ErrProducerFenced", err)
	}
	if err := f.c.EndTxn(ctx, "twin", npid, nepoch, true); !errors.Is(err, txn.ErrInvalidTxnState) {
		t.Fatalf("the new producer's commit with nothing begun: %v, want ErrInvalidTxnState", err)
	}
	if f.lake.records("a") != 0 {
		t.Fatalf("%d batches committed from aborted transactions", f.lake.records("a"))
	}
	if _, _, err := f.c.InitProducerID(ctx, "x", int32(2*time.Hour/time.Millisecond), -1, -1); !errors.Is(err, txn.ErrInvalidTimeout) {
		t.Fatalf("a timeout above the maximum: %v, want ErrInvalidTimeout", err)
	}
}

// Records for a partition the transaction did not add, or for a topic
// the lake refuses, are refused, and nothing is added.
func TestUnaddedAndUnknownPartitionsAreRefused(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	pid, epoch := f.begin("p", txn.TopicPartition{Topic: "a", Partition: 0})
	errs := f.c.Stage(ctx, "p", pid, epoch, []txn.StagedBatch{batch("a", 1, 0, 1), batch("a", 0, 0, 1)})
	if !errors.Is(errs[0], txn.ErrInvalidTxnState) || errs[1] != nil {
		t.Fatalf("a request with records for a partition not added and one added: %v, want ErrInvalidTxnState and nil", errs)
	}
	errs, err := f.c.AddPartitions(ctx, "p", pid, epoch, []txn.TopicPartition{{Topic: "a", Partition: 1}, {Topic: "unknown", Partition: 0}})
	if err != nil || errs[1] == nil || !errors.Is(errs[0], txn.ErrNotAttempted) {
		t.Fatalf("add with an unknown topic: %v %v, want it refused and the other not attempted", err, errs)
	}
	if verr := f.c.Verify("p", pid, epoch, []txn.TopicPartition{{Topic: "a", Partition: 1}}); verr[0] == nil {
		t.Fatal("a partition of a refused add was added")
	}
}

// A transaction whose topic was deleted before its commit completes with
// the other topics' records, and says so; a transaction adding more than
// MaxGroupsPerTransaction groups is refused.
func TestDeletedTopicAndTooManyGroups(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	pid, epoch := f.begin("gone", txn.TopicPartition{Topic: "a", Partition: 0}, txn.TopicPartition{Topic: "deleted", Partition: 0})
	for _, topic := range []string{"a", "deleted"} {
		if err := f.stage("gone", pid, epoch, batch(topic, 0, 0, 1)); err != nil {
			t.Fatal(err)
		}
	}
	f.lake.failing("deleted", fmt.Errorf("%w: deleted", txn.ErrTopicGone))
	if err := f.c.EndTxn(ctx, "gone", pid, epoch, true); err != nil {
		t.Fatalf("commit with a deleted topic: %v, want the rest committed", err)
	}
	if f.lake.records("a") != 1 {
		t.Fatalf("a holds %d batches, want 1", f.lake.records("a"))
	}
	for i := range txn.MaxGroupsPerTransaction + 1 {
		err := f.c.AddOffsets(ctx, "gone", pid, epoch, fmt.Sprint("g", i))
		if i < txn.MaxGroupsPerTransaction && err != nil {
			t.Fatalf("group %d: %v", i, err)
		}
		if i == txn.MaxGroupsPerTransaction && !errors.Is(err, txn.ErrTooManyGroups) {
			t.Fatalf("group %d: %v, want ErrTooManyGroups", i, err)
		}
	}
}

// A retried KIP-360 epoch bump (its answer lost) gets the same answer; an
// epoch that is neither current nor the one bumped from is fenced. A
// decided commit's marker is pending until the commit completes, and a
// staged offset makes its whole group unstable.
func TestBumpRetryPendingAndUnstableGroup(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	pid, epoch := f.begin("bump", txn.TopicPartition{Topic: "a", Partition: 0})
	if err := f.c.EndTxn(ctx, "bump", pid, epoch, false); err != nil {
		t.Fatal(err)
	}
	p1, e1, err := f.c.InitProducerID(ctx, "bump", 60_000, pid, epoch)
	if err != nil || p1 != pid || e1 != epoch+1 {
		t.Fatalf("bump: %d/%d %v, want %d/%d", p1, e1, err, pid, epoch+1)
	}
	p2, e2, err := f.c.InitProducerID(ctx, "bump", 60_000, pid, epoch)
	if err != nil || p2 != p1 || e2 != e1 {
		t.Fatalf("the bump retried: %d/%d %v, want the same answer %d/%d", p2, e2, err, p1, e1)
	}
	if _, _, err := f.c.InitProducerID(ctx, "bump", 60_000, pid, e1+5); !errors.Is(err, txn.ErrProducerFenced) {
		t.Fatalf("an epoch from the future: %v, want ErrProducerFenced", err)
	}

	errs, err := f.c.AddPartitions(ctx, "bump", p1, e1, []txn.TopicPartition{{Topic: "a", Partition: 0}})
	if err != nil || errors.Join(errs...) != nil {
		t.Fatal(err, errs)
	}
	if err := f.c.AddOffsets(ctx, "bump", p1, e1, "g"); err != nil {
		t.Fatal(err)
	}
	if err := f.c.StageOffsets(ctx, "bump", p1, e1, []txn.StagedOffset{{Group: "g", Topic: "in", Partition: 3, Offset: 9}}); err != nil {
		t.Fatal(err)
	}
	if !f.c.UnstableGroup("g") || f.c.UnstableGroup("other") {
		t.Fatalf("unstable groups: g %v other %v, want true false", f.c.UnstableGroup("g"), f.c.UnstableGroup("other"))
	}
	if err := f.stage("bump", p1, e1, batch("a", 0, 0, 1)); err != nil {
		t.Fatal(err)
	}
	recs, _ := f.c.Describe([]string{"bump"})
	marker := txn.Marker(recs[0])
	f.lake.failing("a", errors.New("catalog down"))
	if err := f.c.EndTxn(ctx, "bump", p1, e1, true); !errors.Is(err, txn.ErrConcurrentTransactions) {
		t.Fatalf("commit with the table failing: %v", err)
	}
	if !f.c.Pending(marker) {
		t.Fatal("a decided, incomplete commit's marker is not pending")
	}
	f.lake.failing("a", nil)
	if err := f.c.EndTxn(ctx, "bump", p1, e1, true); err != nil {
		t.Fatal(err)
	}
	if f.c.Pending(marker) || f.c.UnstableGroup("g") {
		t.Fatalf("after the commit: pending %v, group unstable %v; want neither", f.c.Pending(marker), f.c.UnstableGroup("g"))
	}
}
