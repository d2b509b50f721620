package txn

import "context"

// State is a transactional id's state, named as Kafka names it
// (DescribeTransactions, ListTransactions, kafka-transactions).
type State string

const (
	StateEmpty          State = "Empty"
	StateOngoing        State = "Ongoing"
	StatePrepareCommit  State = "PrepareCommit"
	StatePrepareAbort   State = "PrepareAbort"
	StateCompleteCommit State = "CompleteCommit"
	StateCompleteAbort  State = "CompleteAbort"
)

// States lists every state, for ListTransactions' filters.
var States = []State{StateEmpty, StateOngoing, StatePrepareCommit, StatePrepareAbort, StateCompleteCommit, StateCompleteAbort}

// TopicPartition is one partition a transaction added.
type TopicPartition struct {
	Topic     string `json:"t"`
	Partition int32  `json:"p"`
}

// PartitionSequence is the last sequence number the producer staged to a
// partition under its current epoch: a transactional producer's sequences
// run on across its transactions, committed or aborted.
type PartitionSequence struct {
	TopicPartition
	Last int32 `json:"s"`
}

// Record is what the Store keeps of one transactional id between
// requests and across restarts.
type Record struct {
	ID         string `json:"id"`
	ProducerID int64  `json:"pid"`
	Epoch      int16  `json:"epoch"`
	// PrevEpoch is the epoch the last InitProducerId bumped from (-1:
	// none), so that its retry (KIP-360: the answer was lost) gets the
	// same answer rather than a fencing.
	PrevEpoch int16 `json:"prev_epoch"`
	TimeoutMs int32 `json:"timeout_ms"`
	State     State `json:"state"`
	// Number counts the transactions begun under the id: with the
	// producer id and epoch it names the current one (Marker).
	Number int64 `json:"n"`
	// StartMs is when the current transaction began (-1: none);
	// UpdateMs when the id was last used.
	StartMs  int64 `json:"start_ms"`
	UpdateMs int64 `json:"update_ms"`
	// Partitions and Groups are what the current transaction added.
	Partitions []TopicPartition `json:"parts,omitempty"`
	Groups     []string         `json:"groups,omitempty"`
	// Committed lists the topics whose commit of a transaction in
	// PrepareCommit has landed.
	Committed []string            `json:"committed,omitempty"`
	Sequences []PartitionSequence `json:"seqs,omitempty"`
	// StagedBytes is what the current transaction's batches hold
	// decoded (StagedBatch.Size).
	StagedBytes int64 `json:"staged_bytes"`
	// Batches counts the batches staged: the next one's number.
	Batches int64 `json:"batches"`
}

// StagedBatch is one record batch a transaction staged, as the producer
// sent it (a Kafka RecordBatch of magic 2, compressed or not).
type StagedBatch struct {
	// N orders a transaction's batches: a partition's commit in the
	// order they were staged.
	N         int64
	Topic     string
	Partition int32
	FirstSeq  int32
	LastSeq   int32
	Batch     []byte
	// Size is what the batch holds decoded, in memory, when its
	// transaction commits: what MaxTransactionBytes bounds (not kept in
	// the store: the record's StagedBytes sums it).
	Size int64
}

// StagedOffset is one consumer group offset a transaction commits
// (TxnOffsetCommit).
type StagedOffset struct {
	Group       string
	Topic       string
	Partition   int32
	Offset      int64
	LeaderEpoch int32
	Metadata    string
}

// Store keeps transactional ids and what their transactions staged. Every
// method returns once what it wrote is durable.
type Store interface {
	// LoadTransactions returns every transactional id's record.
	LoadTransactions(ctx context.Context) ([]Record, error)
	// SaveTransaction writes rec (replacing the id's record).
	SaveTransaction(ctx context.Context, rec Record) error
	// StageBatches adds bs to rec.ID's staged batches and writes rec, at
	// once.
	StageBatches(ctx context.Context, rec Record, bs []StagedBatch) error
	// StagedBatches returns rec.ID's staged batches of topic in N order.
	StagedBatches(ctx context.Context, id, topic string) ([]StagedBatch, error)
	// StageOffsets adds (or replaces) staged offsets of id and writes rec,
	// at once.
	StageOffsets(ctx context.Context, rec Record, offs []StagedOffset) error
	// StagedOffsets returns id's staged offsets.
	StagedOffsets(ctx context.Context, id string) ([]StagedOffset, error)
	// ClearStaged removes id's staged batches and offsets and writes rec,
	// at once.
	ClearStaged(ctx context.Context, rec Record) error
	// DeleteTransaction removes the id, its record and anything staged.
	DeleteTransaction(ctx context.Context, id string) error
}
