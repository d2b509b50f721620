package produce

import "errors"

// Errors a produce request can meet; protocol/ maps each to its Kafka code.
var (
	// ErrUnknownTopic: no table stands for the topic.
	ErrUnknownTopic = errors.New("unknown topic")
	// ErrReadOnly: the topic's table is not one lakegw takes records for
	// (a table other engines write: its changes are served, read-only).
	ErrReadOnly = errors.New("topic is read-only")
	// ErrUnknownPartition: the partition is not one of the topic's.
	ErrUnknownPartition = errors.New("unknown partition")
	// ErrOutOfOrderSequence: an idempotent producer's batch does not
	// follow its previous one.
	ErrOutOfOrderSequence = errors.New("out of order sequence number")
	// ErrDuplicateSequence: a batch older than the ones kept for retries.
	ErrDuplicateSequence = errors.New("duplicate sequence number")
	// ErrInvalidProducerEpoch: a producer fenced by a newer epoch of
	// its id.
	ErrInvalidProducerEpoch = errors.New("invalid producer epoch")
	// ErrCommitFailed: the Iceberg commit that was to hold the batch
	// failed; nothing of it is visible and a retry is safe.
	ErrCommitFailed = errors.New("commit failed")
	// ErrInvalidRecord: a record lakegw cannot store.
	ErrInvalidRecord = errors.New("invalid record")
	// ErrTopicExists: CreateRawTopic of a topic that exists.
	ErrTopicExists = errors.New("topic already exists")
	// ErrInvalidTopic: a topic name or setting lakegw cannot create.
	ErrInvalidTopic = errors.New("invalid topic")
	// ErrInvalidPartitions: a partition count lakegw cannot create.
	ErrInvalidPartitions = errors.New("invalid partition count")
	// ErrInvalidConfig: a topic config that does not apply.
	ErrInvalidConfig = errors.New("invalid topic config")
	// ErrClosed: the gateway is shutting down.
	ErrClosed = errors.New("gateway shutting down")
)
