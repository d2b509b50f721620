package protocol

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/lakegw/lakegw/internal/kafkaseq"
	"github.com/lakegw/lakegw/produce"
	"github.com/lakegw/lakegw/txn"
)

// Produce (key 0)
//
// v1: throttle time. v2: log append time. v3: transactional id, and
// record batches of magic 2 only. v4: KAFKA_STORAGE_ERROR. v5: log start
// offset. v6-v7: nothing new (v7: ZSTD). v8: record errors and an error
// message per partition. v9: flexible. v10-v11: leader hints on
// NOT_LEADER_OR_FOLLOWER (KIP-951), which a single gateway never sends.
// v12: a transaction's partitions added by the produce request itself
// (KIP-890 part 2), which clients do only when the broker advertises the
// transaction.version feature at 2: lakegw does not, so a transactional
// producer stays at v11 and adds its partitions with AddPartitionsToTxn.
// v13: topics named by topic id (an unknown one is UNKNOWN_TOPIC_ID).
//
// Advertised from v0: librdkafka turns compression off when a broker does
// not list Produce v0-2; v0-2 batches (magic 0 and 1) are answered with
// UNSUPPORTED_FOR_MESSAGE_FORMAT. A raw topic (produce.CreateRawTopic)
// takes records; a topic serving a table other engines write is read-only
// and says so. Each partition is answered once the Iceberg commit holding
// its records has succeeded; acks=0 is not answered at all. A
// transaction's records are answered once staged (txn.Coordinator.Stage),
// with base offset -1: their offsets are decided when it commits.
func init() { register(kmsg.Produce, 0, 13, handleProduce) }

const readOnlyMessage = "lakegw topics are read-only: they serve the changes of Iceberg tables; write to the table instead"

func handleProduce(ctx context.Context, c *conn, req *kmsg.ProduceRequest) (kmsg.Response, error) {
	resp := req.ResponseKind().(*kmsg.ProduceResponse)
	if req.TimeoutMillis > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(req.TimeoutMillis)*time.Millisecond)
		defer cancel()
	}
	// A connection's produce requests are submitted in the order they
	// were read, as a broker appends them: an idempotent producer's
	// pipelined batches arrive in sequence.
	turn := produceTurnOf(ctx)
	defer turn.done()
	turn.wait(ctx)
	type topicWait struct {
		sub   *produce.Submitted
		parts []int   // the response partitions waiting on sub, by batch
		errs  []error // refusals before submitting, by response partition
	}
	waits := make([]topicWait, len(req.Topics))
	for ti, t := range req.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		var batches []produce.Batch
		w := &waits[ti]
		w.errs = make([]error, len(t.Partitions))
		var topicErr error
		if req.Version >= 13 {
			if served, ok := c.s.reg.TopicByID(uuid.UUID(t.TopicID)); ok {
				t.Topic = served.Name
			} else {
				topicErr = refuse(kerr.UnknownTopicID, "no topic has id %s", uuid.UUID(t.TopicID))
			}
		}
		switch {
		case topicErr != nil:
		case c.s.produce == nil:
			topicErr = produce.ErrReadOnly
		case req.TransactionID != nil && c.s.txn == nil:
			topicErr = refuse(transactionsOff, "this lakegw coordinates no transactions")
		default:
			// A read-only or unknown topic says so before its records
			// are looked at.
			topicErr = c.s.produce.CheckTopic(ctx, t.Topic)
		}
		for pi, p := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition = p.Partition
			rp.BaseOffset, rp.LogAppendTime, rp.LogStartOffset = -1, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
			switch {
			case topicErr != nil:
				w.errs[pi] = topicErr
			case !c.s.writeLeads(t.Topic, p.Partition):
				// One writer per partition: its leader's. The client
				// finds it in Metadata and sends the batch there.
				w.errs[pi] = refuse(kerr.NotLeaderForPartition, "node %d leads %s/%d", c.s.leaderOf(c.s.view(), t.Topic, p.Partition).ID, t.Topic, p.Partition)
			default:
				b, berr := decodeBatch(p.Partition, p.Records, req.TransactionID != nil)
				if berr != nil {
					w.errs[pi] = berr
					continue
				}
				batches = append(batches, b)
				w.parts = append(w.parts, pi)
			}
		}
		switch {
		case len(batches) == 0:
		case req.TransactionID != nil:
			// Staged in the transaction, in the connection's order: its
			// records become visible, with their offsets, when it commits.
			stageTransactional(ctx, c, *req.TransactionID, t, batches, w.parts, w.errs)
			w.parts = nil
		default:
			w.sub = c.s.produce.Submit(ctx, t.Topic, batches)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	turn.done()
	var throttled time.Duration
	for ti := range waits {
		w := &waits[ti]
		rt := &resp.Topics[ti]
		if w.sub != nil {
			results, th := w.sub.Wait(ctx)
			throttled += th
			for bi, r := range results {
				rp := &rt.Partitions[w.parts[bi]]
				if r.Err != nil {
					w.errs[w.parts[bi]] = r.Err
					continue
				}
				rp.BaseOffset, rp.LogStartOffset = r.BaseOffset, r.LogStartOffset
			}
		}
		for pi, err := range w.errs {
			if err == nil {
				continue
			}
			rp := &rt.Partitions[pi]
			rp.ErrorCode = produceCode(err).Code
			msg := err.Error()
			if errors.Is(err, produce.ErrReadOnly) {
				msg = readOnlyMessage + " (" + msg + ")"
			}
			rp.ErrorMessage = &msg
			rp.BaseOffset = -1
			var re *produce.RecordError
			if errors.As(err, &re) {
				// From v8 the client is told which record was refused.
				e := kmsg.NewProduceResponseTopicPartitionErrorRecord()
				e.RelativeOffset = int32(re.Index)
				m := re.Err.Error()
				e.ErrorMessage = &m
				rp.ErrorRecords = append(rp.ErrorRecords, e)
			}
		}
	}
	resp.ThrottleMillis = int32(throttled / time.Millisecond)
	if req.Acks == 0 {
		// acks=0 producers read no response, and Kafka sends none; on an
		// error it closes the connection, so that the client refreshes
		// its metadata rather than keep sending where nothing is taken.
		for _, rt := range resp.Topics {
			for _, rp := range rt.Partitions {
				if rp.ErrorCode != 0 {
					return nil, fmt.Errorf("acks=0 produce to %s/%d refused: %s", rt.Topic, rp.Partition, *rp.ErrorMessage)
				}
			}
		}
		return nil, nil
	}
	return resp, nil
}

// stageTransactional stages a transaction's decoded batches of one topic
// (batches[i] answers partition parts[i] of t), setting errs of the
// partitions refused. The producer is checked (its epoch, the partitions
// its transaction added) before its records are checked against the
// table: a fenced producer's records must not evolve a table's schema.
func stageTransactional(ctx context.Context, c *conn, id string, t kmsg.ProduceRequestTopic, batches []produce.Batch, parts []int, errs []error) {
	topic := produce.CanonicalTopic(t.Topic)
	// A request's batches are one producer's (its id and epoch), staged
	// together, in one durable write.
	type producer struct {
		pid   int64
		epoch int16
	}
	byProducer := map[producer][]int{}
	var order []producer
	for i, b := range batches {
		p := producer{b.ProducerID, b.ProducerEpoch}
		if _, ok := byProducer[p]; !ok {
			order = append(order, p)
		}
		byProducer[p] = append(byProducer[p], i)
	}
	for _, p := range order {
		var idx []int
		var tps []txn.TopicPartition
		for _, i := range byProducer[p] {
			tps = append(tps, txn.TopicPartition{Topic: topic, Partition: batches[i].Partition})
		}
		for j, err := range c.s.txn.Verify(id, p.pid, p.epoch, tps) {
			if i := byProducer[p][j]; err != nil {
				errs[parts[i]] = err
			} else {
				idx = append(idx, i)
			}
		}
		checked := make([]produce.Batch, len(idx))
		for j, i := range idx {
			checked[j] = batches[i]
		}
		var staged []txn.StagedBatch
		var at []int
		for j, err := range c.s.produce.Check(ctx, t.Topic, checked) {
			i := idx[j]
			if err != nil {
				errs[parts[i]] = err
				continue
			}
			b := &batches[i]
			staged = append(staged, txn.StagedBatch{Topic: topic, Partition: b.Partition, FirstSeq: b.BaseSequence,
				LastSeq: kafkaseq.Last(b.BaseSequence, len(b.Records)), Batch: t.Partitions[parts[i]].Records, Size: b.Size()})
			at = append(at, i)
		}
		if len(staged) == 0 {
			continue
		}
		for j, err := range c.s.txn.Stage(ctx, id, p.pid, p.epoch, staged) {
			errs[parts[at[j]]] = err
		}
	}
}
