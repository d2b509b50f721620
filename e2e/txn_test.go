package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// txnClient is a transactional franz-go producer of id, partitioning by
// the record's Partition.
func txnClient(t *testing.T, addr, id string, opts ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := kgo.NewClient(append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.TransactionalID(id),
		kgo.RecordPartitioner(kgo.ManualPartitioner()), kgo.ProducerLinger(2 * time.Millisecond)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

// produceTxn produces n records valued prefix-i over partitions in one
// transaction of cl and ends it with commit (or abort); every produce is
// acknowledged (staged) before the end.
func produceTxn(ctx context.Context, t *testing.T, cl *kgo.Client, topic, prefix string, n, partitions int, commit bool) {
	t.Helper()
	if err := cl.BeginTransaction(); err != nil {
		t.Fatalf("begin: %v", err)
	}
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: topic, Partition: int32(i % partitions), Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprintf("%s-%d", prefix, i))}
	}
	if err := cl.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce %s: %v", prefix, err)
	}
	if err := cl.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
		t.Fatalf("end %s (commit %v): %v", prefix, commit, err)
	}
}

// endOffsets is the topic's end offset per partition, as both isolation
// levels list it.
func endOffsets(ctx context.Context, t *testing.T, adm *kadm.Client, topic string) (uncommitted, committed map[int32]int64) {
	t.Helper()
	uncommitted, committed = map[int32]int64{}, map[int32]int64{}
	ends, err := adm.ListEndOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	ends.Each(func(o kadm.ListedOffset) { uncommitted[o.Partition] = o.Offset })
	stable, err := adm.ListCommittedOffsets(ctx, topic)
	if err != nil {
		t.Fatal(err)
	}
	stable.Each(func(o kadm.ListedOffset) { committed[o.Partition] = o.Offset })
	return uncommitted, committed
}

// readValues reads every record of topic from the start, at the isolation
// level given, until total records are read.
func readValues(ctx context.Context, t *testing.T, addr, topic string, total int64, readCommitted bool) []*kgo.Record {
	t.Helper()
	opts := []kgo.Opt{kgo.SeedBrokers(addr), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart())}
	if readCommitted {
		opts = append(opts, kgo.FetchIsolationLevel(kgo.ReadCommitted()))
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var out []*kgo.Record
	for int64(len(out)) < total {
		fs := cl.PollFetches(ctx)
		if err := fs.Err0(); err != nil {
			t.Fatalf("consume %s after %d of %d records: %v", topic, len(out), total, err)
		}
		fs.EachRecord(func(r *kgo.Record) { out = append(out, r) })
	}
	return out
}

// A transactional producer's records are invisible until EndTxn commits
// them, then all of them at once with dense offsets; an aborted
// transaction leaves nothing, not even a gap in the offsets; both
// isolation levels see the same committed records and the same end
// offsets while a transaction is open.
func TestTransactionsCommitAtomicallyAndAbortLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	g := startGateway(t, dir, "", "--commit-interval", "20ms")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const topic, partitions = "orders", 2
	adm := kadm.NewClient(mustClient(t, g.addr))
	if resp, err := adm.CreateTopics(ctx, partitions, 1, nil, topic); err != nil || resp[topic].Err != nil {
		t.Fatalf("create topic: %v %v", err, resp[topic].Err)
	}
	prod := txnClient(t, g.addr, "orders-writer")

	// Open: 100 records staged, none visible at either isolation level.
	if err := prod.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	var recs []*kgo.Record
	for i := range 100 {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % partitions), Value: []byte(fmt.Sprintf("a-%d", i))})
	}
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatalf("produce in a transaction: %v", err)
	}
	time.Sleep(200 * time.Millisecond) // ten commit intervals: nothing of it may land
	hw, lso := endOffsets(ctx, t, adm, topic)
	for p := range int32(partitions) {
		if hw[p] != 0 || lso[p] != 0 {
			t.Fatalf("partition %d with a transaction open: high watermark %d, last stable offset %d, want 0 and 0", p, hw[p], lso[p])
		}
	}
	desc, err := adm.DescribeTransactions(ctx, "orders-writer")
	if err != nil {
		t.Fatal(err)
	}
	if d, ok := desc["orders-writer"]; !ok || d.State != "Ongoing" || len(d.Topics[topic]) != partitions {
		t.Fatalf("DescribeTransactions while open: %+v, want Ongoing over %d partitions of %s", desc, partitions, topic)
	}
	if err := prod.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit: %v", err)
	}
	// Visible at once when EndTxn answers, every partition dense from 0.
	hw, lso = endOffsets(ctx, t, adm, topic)
	if hw[0]+hw[1] != 100 || hw[0] != lso[0] || hw[1] != lso[1] {
		t.Fatalf("after commit: high watermarks %v, last stable offsets %v, want 100 records in all, equal", hw, lso)
	}

	// Aborted: nothing, and the next commit continues the offsets densely.
	produceTxn(ctx, t, prod, topic, "b", 50, partitions, false)
	produceTxn(ctx, t, prod, topic, "c", 30, partitions, true)
	for _, committed := range []bool{false, true} {
		got := readValues(ctx, t, g.addr, topic, 130, committed)
		next := map[int32]int64{}
		counts := map[byte]int{}
		for _, r := range got {
			if r.Offset != next[r.Partition] {
				t.Fatalf("read_committed=%v: partition %d offset %d, want %d (dense)", committed, r.Partition, r.Offset, next[r.Partition])
			}
			next[r.Partition]++
			counts[r.Value[0]]++
		}
		if counts['a'] != 100 || counts['b'] != 0 || counts['c'] != 30 {
			t.Fatalf("read_committed=%v: records by transaction %v, want a:100 b:0 c:30", committed, counts)
		}
	}
	hw, _ = endOffsets(ctx, t, adm, topic)
	if hw[0]+hw[1] != 130 {
		t.Fatalf("end offsets %v after an aborted and a committed transaction, want 130 records", hw)
	}
	// One transaction over two tables: each gets its part in one commit,
	// and an abort leaves neither anything.
	const audit = "orders_audit"
	if resp, err := adm.CreateTopics(ctx, 1, 1, nil, audit); err != nil || resp[audit].Err != nil {
		t.Fatalf("create %s: %v %v", audit, err, resp[audit].Err)
	}
	for _, commit := range []bool{false, true} {
		if err := prod.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		var both []*kgo.Record
		for i := range 20 {
			both = append(both, &kgo.Record{Topic: topic, Partition: int32(i % partitions), Value: []byte(fmt.Sprintf("d-%d", i))},
				&kgo.Record{Topic: audit, Value: []byte(fmt.Sprintf("audit-%d", i))})
		}
		if err := prod.ProduceSync(ctx, both...).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := prod.EndTransaction(ctx, kgo.TransactionEndTry(commit)); err != nil {
			t.Fatalf("end a transaction over two topics (commit %v): %v", commit, err)
		}
	}
	hw, _ = endOffsets(ctx, t, adm, topic)
	ahw, _ := endOffsets(ctx, t, adm, audit)
	if hw[0]+hw[1] != 150 || ahw[0] != 20 {
		t.Fatalf("after an aborted and a committed transaction over two topics: %s %v, %s %v; want 150 and 20 records", topic, hw, audit, ahw)
	}

	list, err := adm.ListTransactions(ctx, nil, []string{"CompleteCommit"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := list["orders-writer"]; !ok || len(list) != 1 {
		t.Fatalf("ListTransactions CompleteCommit: %+v, want orders-writer alone", list)
	}
	// ListTransactions v2 filters by a pattern of the whole id (KIP-1152).
	for _, tc := range []struct {
		pattern string
		want    int
		code    int16
	}{{"orders-.*", 1, 0}, {"orders", 0, 0}, {"(", 0, kerr.InvalidRegularExpression.Code}} {
		req := kmsg.NewPtrListTransactionsRequest()
		req.Version = 2
		req.TransactionalIDPattern = kmsg.StringPtr(tc.pattern)
		resp, err := req.RequestWith(ctx, mustClient(t, g.addr))
		if err != nil {
			t.Fatal(err)
		}
		if resp.ErrorCode != tc.code || len(resp.TransactionStates) != tc.want {
			t.Fatalf("ListTransactions v2 pattern %q: error %d, %d transactions; want %d and %d", tc.pattern, resp.ErrorCode, len(resp.TransactionStates), tc.code, tc.want)
		}
	}
}

// A second producer with the same transactional id fences the first: the
// first's open transaction is aborted and it is told it was fenced; a
// transaction left open past transaction.timeout.ms is aborted and its
// producer fenced too.
func TestTransactionsFenceAndTimeOut(t *testing.T) {
	dir := t.TempDir()
	g := startGateway(t, dir, "", "--commit-interval", "20ms")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const topic = "fenced"
	adm := kadm.NewClient(mustClient(t, g.addr))
	if resp, err := adm.CreateTopics(ctx, 1, 1, nil, topic); err != nil || resp[topic].Err != nil {
		t.Fatalf("create topic: %v %v", err, resp[topic].Err)
	}
	old := txnClient(t, g.addr, "zombie")
	if err := old.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := old.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("zombie-0")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	// The new producer's InitProducerId aborts the zombie's transaction.
	fresh := txnClient(t, g.addr, "zombie")
	produceTxn(ctx, t, fresh, topic, "fresh", 5, 1, true)
	err := old.EndTransaction(ctx, kgo.TryCommit)
	if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("the fenced producer's commit: %v, want PRODUCER_FENCED", err)
	}
	got := readValues(ctx, t, g.addr, topic, 5, true)
	for _, r := range got {
		if string(r.Value[:5]) != "fresh" {
			t.Fatalf("read %q: the fenced producer's record is visible", r.Value)
		}
	}

	// Timed out: aborted by the coordinator, its producer fenced.
	slow := txnClient(t, g.addr, "slowpoke", kgo.TransactionTimeout(time.Second))
	if err := slow.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	if err := slow.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: []byte("late-0")}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	err = slow.EndTransaction(ctx, kgo.TryCommit)
	if !errors.Is(err, kerr.ProducerFenced) && !errors.Is(err, kerr.InvalidProducerEpoch) {
		t.Fatalf("commit after the timeout: %v, want PRODUCER_FENCED", err)
	}
	hw, _ := endOffsets(ctx, t, adm, topic)
	if hw[0] != 5 {
		t.Fatalf("end offset %d, want 5: a fenced or timed-out transaction's records are visible", hw[0])
	}
	if !strings.Contains(g.Logs(), "transaction timed out") {
		t.Fatalf("no log line says the transaction timed out")
	}
}

// Consume-transform-produce with franz-go's GroupTransactSession, the
// gateway killed with SIGKILL and restarted several times mid-stream:
// every input record is in the output exactly once, and the group's
// committed offsets end at the input's end (KIP-447 offsets committed in
// the transactions).
func TestGroupTransactSessionExactlyOnceAcrossKill9(t *testing.T) {
	exactlyOnceAcrossKill9(t)
}

// exactlyOnceAcrossKill9 runs the exactly-once test with the gateway's
// flags extra (a state store, for one).
func exactlyOnceAcrossKill9(t *testing.T, extra ...string) {
	dir := t.TempDir()
	addr := freeAddr(t)
	flags := append([]string{"--commit-interval", "20ms"}, extra...)
	g := startGateway(t, dir, addr, flags...)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const in, out, partitions, n = "etl-in", "etl-out", 2, 3000
	adm := kadm.NewClient(mustClient(t, addr))
	for _, topic := range []string{in, out} {
		if resp, err := adm.CreateTopics(ctx, partitions, 1, nil, topic); err != nil || resp[topic].Err != nil {
			t.Fatalf("create %s: %v %v", topic, err, resp[topic].Err)
		}
	}
	// Small batches, read one at a time: many short transactions, so
	// that the kills land mid-stream.
	src := mustClient(t, addr)
	for round := range n / 100 {
		var recs []*kgo.Record
		for i := round * 100; i < (round+1)*100; i++ {
			recs = append(recs, &kgo.Record{Topic: in, Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprintf("v-%d", i))})
		}
		if err := src.ProduceSync(ctx, recs...).FirstErr(); err != nil {
			t.Fatalf("produce the input: %v", err)
		}
	}

	runCtx, stop := context.WithCancel(ctx)
	var aborted atomic.Int64
	done := make(chan error, 1)
	go func() {
		// A session whose End fails is done with (franz-go: "no returned
		// error is retryable"); a new one, as a restarted application,
		// fences its transaction and consumes from the committed offsets.
		for runCtx.Err() == nil {
			if err := runSession(runCtx, t, addr, in, out, &aborted); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()

	committedOffsets := func() int64 {
		offs, err := adm.FetchOffsets(ctx, "etl-group")
		if err != nil {
			return -1
		}
		var sum int64
		offs.Each(func(o kadm.OffsetResponse) { sum += o.At })
		return sum
	}
	for kill := 0; kill < 3; kill++ {
		time.Sleep(time.Duration(400+kill*150) * time.Millisecond)
		if at := committedOffsets(); at >= n {
			t.Fatalf("kill %d came after the stream ended (committed offsets %d): it tests nothing", kill, at)
		}
		g.kill9()
		g = startGateway(t, dir, addr, flags...)
	}
	for committedOffsets() != n {
		select {
		case <-ctx.Done():
			t.Fatalf("the group never committed all %d input offsets; gateway logs:\n%s", n, tailLines(g.Logs(), 40))
		case <-time.After(100 * time.Millisecond):
		}
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("session: %v", err)
	}
	hw, _ := endOffsets(ctx, t, adm, out)
	var total int64
	for _, o := range hw {
		total += o
	}
	if total != n {
		t.Fatalf("output holds %d records, want %d (each input exactly once)", total, n)
	}
	t.Logf("%d transactions not committed over 3 kills", aborted.Load())
	seen := map[string]int{}
	for _, r := range readValues(ctx, t, addr, out, total, true) {
		seen[string(r.Value)]++
	}
	for i := range n {
		if v := fmt.Sprintf("x-v-%d", i); seen[v] != 1 {
			t.Fatalf("output holds %q %d times, want once", v, seen[v])
		}
	}
}

// A transaction whose records were acknowledged (flushed: Flink's
// pre-commit) survives a SIGKILL of the gateway and is committed after
// the restart by the same producer, id and epoch; one whose producer
// starts again instead (InitProducerId) is aborted, and none of its
// records is ever visible.
func TestFlushedTransactionCommitsAfterKill9(t *testing.T) {
	dir := t.TempDir()
	addr := freeAddr(t)
	g := startGateway(t, dir, addr, "--commit-interval", "20ms")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const topic, partitions = "crash-txn", 2
	adm := kadm.NewClient(mustClient(t, addr))
	if resp, err := adm.CreateTopics(ctx, partitions, 1, nil, topic); err != nil || resp[topic].Err != nil {
		t.Fatalf("create topic: %v %v", err, resp[topic].Err)
	}
	prod := txnClient(t, addr, "survivor", kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }))
	lost := txnClient(t, addr, "lost")
	for _, cl := range []*kgo.Client{prod, lost} {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
	}
	var recs, lostRecs []*kgo.Record
	for i := range 40 {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % partitions), Value: []byte(fmt.Sprintf("kept-%d", i))})
		lostRecs = append(lostRecs, &kgo.Record{Topic: topic, Partition: int32(i % partitions), Value: []byte(fmt.Sprintf("lost-%d", i))})
	}
	if err := prod.ProduceSync(ctx, recs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if err := lost.ProduceSync(ctx, lostRecs...).FirstErr(); err != nil {
		t.Fatal(err)
	}
	g.kill9()
	g = startGateway(t, dir, addr, "--commit-interval", "20ms")
	if err := prod.EndTransaction(ctx, kgo.TryCommit); err != nil {
		t.Fatalf("commit after the restart: %v; gateway logs:\n%s", err, tailLines(g.Logs(), 30))
	}
	// The lost producer's successor fences it: its transaction is aborted.
	successor := txnClient(t, addr, "lost")
	produceTxn(ctx, t, successor, topic, "next", 10, partitions, true)
	hw, lso := endOffsets(ctx, t, adm, topic)
	if hw[0]+hw[1] != 50 || hw[0] != lso[0] || hw[1] != lso[1] {
		t.Fatalf("end offsets %v (stable %v), want 50 records: the survivor's 40 and the successor's 10", hw, lso)
	}
	for _, r := range readValues(ctx, t, addr, topic, 50, true) {
		if strings.HasPrefix(string(r.Value), "lost-") {
			t.Fatalf("record %q of the aborted transaction is visible", r.Value)
		}
	}
}

// AddPartitionsToTxn's batched form (v4+, what a broker sends the
// coordinator to verify a transactional produce, KIP-890): several
// transactional ids in one request, VerifyOnly checking without adding.
func TestAddPartitionsToTxnBatchedForm(t *testing.T) {
	g := startGateway(t, t.TempDir(), "")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl := mustClient(t, g.addr)
	adm := kadm.NewClient(cl)
	if resp, err := adm.CreateTopics(ctx, 2, 1, nil, "batched"); err != nil || resp["batched"].Err != nil {
		t.Fatalf("create topic: %v %v", err, resp["batched"].Err)
	}
	type producer struct {
		id    string
		pid   int64
		epoch int16
	}
	var ps []producer
	for _, id := range []string{"tx-a", "tx-b"} {
		init := kmsg.NewPtrInitProducerIDRequest()
		init.TransactionalID = kmsg.StringPtr(id)
		init.TransactionTimeoutMillis = 60_000
		resp, err := init.RequestWith(ctx, cl)
		if err != nil || resp.ErrorCode != 0 {
			t.Fatalf("InitProducerId %s: %v %v", id, err, kerr.ErrorForCode(resp.ErrorCode))
		}
		ps = append(ps, producer{id, resp.ProducerID, resp.ProducerEpoch})
	}
	add := func(verifyOnly bool, p producer, partition int32) int16 {
		req := kmsg.NewPtrAddPartitionsToTxnRequest()
		req.Version = 4
		tr := kmsg.NewAddPartitionsToTxnRequestTransaction()
		tr.TransactionalID, tr.ProducerID, tr.ProducerEpoch, tr.VerifyOnly = p.id, p.pid, p.epoch, verifyOnly
		tt := kmsg.NewAddPartitionsToTxnRequestTransactionTopic()
		tt.Topic, tt.Partitions = "batched", []int32{partition}
		tr.Topics = append(tr.Topics, tt)
		req.Transactions = append(req.Transactions, tr)
		resp, err := req.RequestWith(ctx, cl)
		if err != nil || len(resp.Transactions) != 1 {
			t.Fatalf("AddPartitionsToTxn v4: %v %+v", err, resp)
		}
		return resp.Transactions[0].Topics[0].Partitions[0].ErrorCode
	}
	if code := add(true, ps[0], 0); code != kerr.InvalidTxnState.Code {
		t.Fatalf("verify of a partition not added: %v, want INVALID_TXN_STATE", kerr.ErrorForCode(code))
	}
	if code := add(false, ps[0], 0); code != 0 {
		t.Fatalf("add: %v", kerr.ErrorForCode(code))
	}
	if code := add(true, ps[0], 0); code != 0 {
		t.Fatalf("verify of a partition added: %v, want none", kerr.ErrorForCode(code))
	}
	if code := add(true, ps[1], 0); code != kerr.InvalidTxnState.Code {
		t.Fatalf("verify for another transactional id: %v, want INVALID_TXN_STATE", kerr.ErrorForCode(code))
	}
	stale := ps[0]
	stale.epoch--
	if code := add(false, stale, 1); code != kerr.ProducerFenced.Code {
		t.Fatalf("add by an older epoch: %v, want PRODUCER_FENCED", kerr.ErrorForCode(code))
	}
}

// runSession is one consume-transform-produce session of
// TestGroupTransactSessionExactlyOnceAcrossKill9: it returns nil when a
// transaction failed (the caller starts a new session) or ctx ended.
func runSession(ctx context.Context, t *testing.T, addr, in, out string, aborted *atomic.Int64) error {
	sess, err := kgo.NewGroupTransactSession(kgo.SeedBrokers(addr), kgo.TransactionalID("etl"), kgo.ConsumerGroup("etl-group"),
		kgo.ConsumeTopics(in), kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.DefaultProduceTopic(out),
		kgo.FetchMaxBytes(1), kgo.FetchMaxPartitionBytes(1), kgo.RetryBackoffFn(func(int) time.Duration { return 50 * time.Millisecond }))
	if err != nil {
		return err
	}
	defer sess.Close()
	for ctx.Err() == nil {
		fs := sess.PollFetches(ctx)
		if fs.IsClientClosed() || ctx.Err() != nil {
			return nil
		}
		if err := sess.Begin(); err != nil {
			return fmt.Errorf("begin: %w", err)
		}
		fs.EachRecord(func(r *kgo.Record) {
			sess.Produce(ctx, &kgo.Record{Key: r.Key, Value: append([]byte("x-"), r.Value...)}, nil)
		})
		committed, err := sess.End(ctx, kgo.TryCommit)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			aborted.Add(1)
			t.Logf("transaction failed (%v); a new session takes over", err)
			return nil
		case !committed:
			// Aborted (a rebalance, a failed offset commit): the session
			// consumes again from the committed offsets.
			aborted.Add(1)
		}
		time.Sleep(20 * time.Millisecond) // the transform's work
	}
	return nil
}
