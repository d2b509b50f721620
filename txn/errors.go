package txn

import "errors"

// Errors a transactional request can meet; protocol/ maps each to its
// Kafka error code.
var (
	// ErrProducerFenced: a newer epoch of the transactional id exists
	// (PRODUCER_FENCED, INVALID_PRODUCER_EPOCH before it).
	ErrProducerFenced = errors.New("producer fenced by a newer epoch")
	// ErrInvalidProducerIDMapping: the producer id is not the one the
	// transactional id holds.
	ErrInvalidProducerIDMapping = errors.New("producer id is not the transactional id's")
	// ErrInvalidTxnState: the request does not fit the transaction's
	// state (records for a partition never added, EndTxn with nothing
	// begun, a commit of an aborted transaction).
	ErrInvalidTxnState = errors.New("invalid transaction state")
	// ErrConcurrentTransactions: the previous transaction is still being
	// completed; retry.
	ErrConcurrentTransactions = errors.New("the previous transaction is still completing")
	// ErrInvalidTimeout: transaction.timeout.ms above the gateway's
	// maximum or not positive.
	ErrInvalidTimeout = errors.New("invalid transaction timeout")
	// ErrInvalidID: a transactional id that is empty or longer than
	// MaxIDBytes.
	ErrInvalidID = errors.New("invalid transactional id")
	// ErrTransactionTooLarge: the transaction staged more than
	// Options.MaxTransactionBytes.
	ErrTransactionTooLarge = errors.New("transaction too large")
	// ErrTooManyTransactionalIDs: Options.MaxTransactionalIDs ids are
	// in use and none idle long enough to forget.
	ErrTooManyTransactionalIDs = errors.New("too many transactional ids")
	// ErrOutOfOrderSequence, ErrDuplicateSequence: an idempotent batch
	// that does not follow the partition's previous one.
	ErrOutOfOrderSequence = errors.New("out of order sequence number")
	ErrDuplicateSequence  = errors.New("duplicate sequence number")
	// ErrTopicGone: Tables says a transaction's topic no longer exists
	// (deleted while its commit was due): that part of it is dropped.
	ErrTopicGone = errors.New("topic no longer exists")
	// ErrTooManyGroups: a transaction adding more than
	// MaxGroupsPerTransaction consumer groups.
	ErrTooManyGroups = errors.New("too many consumer groups in one transaction")
	// ErrStore: the state store failed; nothing changed and a retry is
	// safe.
	ErrStore = errors.New("transaction state store failed")
	// ErrClosed: the coordinator is shutting down.
	ErrClosed = errors.New("transaction coordinator closed")
)
